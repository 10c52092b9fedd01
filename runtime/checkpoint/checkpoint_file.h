// One checkpoint file, without protobuf's 2 GiB limit on a message:
//
//   "ADCKPT02" | tensor bytes, each 64-byte aligned | CheckpointHeader | trailer (24 bytes)
//   trailer:   header offset (u64) | header length (u64) | CRC-32C of the header (u32) | "ADCE"
//
// All integers little-endian. The header (proto/checkpoint.proto) holds the step, the data
// position, the random engine and the table of tensors (name, type, dims, offset, length,
// CRC-32C). Writing streams each tensor from its storage to the file, computing its checksum on
// the way; reading verifies the trailer and the header when the file is opened and each tensor's
// checksum as it is read, straight into tensor storage. A file cut short by a crash has no valid
// trailer and is reported as torn; flipped bits are reported by the checksum of the tensor or the
// header they hit. Files of the previous format (one serialized `Checkpoint` message, written by
// earlier releases as checkpoint-<step>.pb) are read too.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::proto {
class Checkpoint;
class TensorValue;
}  // namespace autodist::proto

namespace autodist::checkpoint {

// Everything of a checkpoint except its tensors.
struct CheckpointMeta {
  int64_t step = 0;   // optimizer steps taken
  int64_t epoch = 0;  // data position: the next batch to read
  int64_t batch = 0;
  std::string rng_state;  // the session's std::mt19937_64, as operator<< writes it
  std::string model;      // the model file the run started from, for messages
};

// Host tensors by name, in the order they are written.
using NamedTensors = std::vector<std::pair<std::string, tensor::Tensor>>;

// One piece of a tensor kept in another checkpoint file (a parameter server's shard file): the
// tensor `name` of `file` (a name in the same directory) is the range [offset, offset + extent)
// of the whole along `axis`; axis -1: it is the whole tensor.
struct ShardPieceRef {
  std::string file;
  std::string name;
  int axis = -1;
  int64_t offset = 0;
  int64_t extent = 0;
};

// A tensor of a checkpoint whose bytes are in other files, by pieces.
struct PiecedTensor {
  std::string name;
  tensor::DType dtype = tensor::DType::kFloat32;
  tensor::Shape shape;
  std::vector<ShardPieceRef> pieces;
};

struct CheckpointContents {
  CheckpointMeta meta;
  NamedTensors variables;
  NamedTensors states;     // replica-local state (BatchNorm running statistics)
  NamedTensors optimizer;  // optimizer slots, keyed "<variable>/<slot>"
  // Variables and optimizer slots whose bytes other files hold (written by parameter servers).
  std::vector<PiecedTensor> pieced_variables;
  std::vector<PiecedTensor> pieced_optimizer;
};

// Writes `contents` to `path` durably (common/durable_file.h): whole or not at all, and returns
// the file's size. Throws InvalidArgument naming the path, and the bytes needed when the disk is
// full.
uint64_t WriteCheckpointFile(const std::string& path, const CheckpointContents& contents);

// The bytes WriteCheckpointFile writes for `contents`.
uint64_t CheckpointFileSize(const CheckpointContents& contents);

// An opened checkpoint: its meta and tensor table; the tensors are read on demand.
class CheckpointReader {
 public:
  struct Entry {
    std::string name;
    tensor::DType dtype = tensor::DType::kUndefined;
    tensor::Shape shape;
    uint64_t offset = 0;
    uint64_t length = 0;
    uint32_t crc32c = 0;
    const proto::TensorValue* legacy = nullptr;  // the value, in an old-format file
    std::vector<ShardPieceRef> pieces;           // non-empty: the bytes are in other files
  };

  // Opens `path` and checks its trailer and header (or parses an old-format file). Throws
  // InvalidArgument naming the path when it is torn, corrupt or not a checkpoint.
  explicit CheckpointReader(std::string path);
  ~CheckpointReader();
  CheckpointReader(CheckpointReader&&) noexcept;
  CheckpointReader& operator=(CheckpointReader&&) noexcept;

  const std::string& path() const { return path_; }
  const CheckpointMeta& meta() const { return meta_; }
  const std::vector<Entry>& variables() const { return variables_; }
  const std::vector<Entry>& states() const { return states_; }
  const std::vector<Entry>& optimizer() const { return optimizer_; }

  // Reads `entry` into `target`, a host tensor of its dtype and shape (e.g. a session's variable:
  // no intermediate copy). Throws InvalidArgument naming the file and tensor when the bytes
  // cannot be read or fail their checksum.
  void ReadInto(const Entry& entry, tensor::Tensor& target) const;
  // Reads `entry` into a new host tensor (assembled from its pieces' files when it has pieces;
  // each piece is checked as it is read). Throws as ReadInto, naming the piece's file.
  tensor::Tensor Read(const Entry& entry) const;

  // The entry named `name` among the variables and optimizer slots; nullptr when there is none.
  const Entry* Find(const std::string& name) const;

 private:
  void OpenLegacy(const std::string& bytes);
  // Reads `entry`'s own bytes (no pieces) to `out`, checking the checksum.
  void ReadBytes(const Entry& entry, void* out) const;
  void ReadPieces(const Entry& entry, tensor::Tensor& out) const;
  // Throws InvalidArgument when the shard files' pieces of `entry` hold fewer bytes than its
  // shape needs (or one is missing).
  void CheckPiecesHoldEnough(const Entry& entry) const;
  const CheckpointReader& Shard(const std::string& file) const;

  std::string path_;
  CheckpointMeta meta_;
  std::vector<Entry> variables_;
  std::vector<Entry> states_;
  std::vector<Entry> optimizer_;
  std::unique_ptr<proto::Checkpoint> legacy_;  // the whole old-format message, when that is it
  // The shard files pieces were read from, opened once each.
  mutable std::map<std::string, std::unique_ptr<CheckpointReader>> shards_;
};

}  // namespace autodist::checkpoint
