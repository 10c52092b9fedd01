// Tensors on the wire (proto/tensor_wire.proto): a tensor is sent as pieces of at most
// `piece_bytes` bytes each, so a message never holds a whole large tensor and the receiver can
// check every piece before it allocates. PieceAssembler is the receiving side: it validates each
// piece against what was announced (type, dims, encoding, a byte limit, contiguous offsets) and
// rebuilds dense tensors and row-sparse gradients. Compressed pushes encode a dense float32
// tensor as float16 halves or as its top-k (index, value) pairs; the assembler decodes them piece
// by piece into the float32 tensor, so the receiver never holds the encoded tensor whole.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/tensor_wire.pb.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::rpc {

// 1 MiB pieces: large enough that per-message overhead is negligible, small enough that many
// tensors interleave and no message approaches gRPC's size limits.
inline constexpr int64_t kDefaultPieceBytes = int64_t{1} << 20;

// A PieceAssembler limit for callers that bound every tensor otherwise: the parameter server
// checks each first piece against its max_tensor_bytes and the hosted shapes, and a client
// reads replies from the server it chose to trust (the pieces are still checked).
inline constexpr int64_t kNoTotalLimit = std::numeric_limits<int64_t>::max();

using PieceSink = std::function<void(autodist::proto::TensorPiece&& piece)>;

// Emits `value` as pieces: the first carries name, type and dims (and `replicas` when > 0); each
// carries its byte offset. An empty tensor is one piece without data.
void EmitTensor(const std::string& name, const tensor::Tensor& value, int32_t replicas,
                int64_t piece_bytes, const PieceSink& sink);

// Emits a row-sparse gradient: the first piece carries the row indices and the rows' dims
// ([n, row dims...]); the rows follow as data. `dense_shape` is not sent: the receiver knows the
// variable it belongs to.
void EmitSparse(const std::string& name, const tensor::SparseGradient& gradient, int32_t replicas,
                int64_t piece_bytes, const PieceSink& sink);

// Emits the float32 tensor of `shape` whose elements are `halves` (FLOAT16: one IEEE float16
// per element, row-major): half the bytes of EmitTensor. Pieces hold whole halves.
void EmitHalves(const std::string& name, const tensor::Shape& shape,
                const std::vector<uint16_t>& halves, int32_t replicas, int64_t piece_bytes,
                const PieceSink& sink);

// Emits the float32 tensor of `shape` that is zero except at `indices` (TOPK: positions in the
// flattened tensor, strictly ascending), where it holds `values`: the indices go in the first
// piece, the values follow as data, 12 bytes per element sent. Pieces hold whole values.
void EmitTopK(const std::string& name, const tensor::Shape& shape,
              const std::vector<int64_t>& indices, const std::vector<float>& values,
              int32_t replicas, int64_t piece_bytes, const PieceSink& sink);

// The first piece of `value` (EmitTensor) or of a row-sparse gradient (EmitSparse; its data are
// the rows) without its data, for a sender that writes the data bytes itself from the tensor's
// own storage (the parameter server's data channel, ps_data_channel.h).
autodist::proto::TensorPiece TensorHeader(const std::string& name, const tensor::Tensor& value,
                                          int32_t replicas);
autodist::proto::TensorPiece SparseHeader(const std::string& name,
                                          const tensor::SparseGradient& gradient, int32_t replicas);

// What a piece with `data_bytes` of data puts on the wire, counted as ReceivedTensor::wire_bytes
// counts it on arrival: the data plus 8 bytes per index it carries.
inline int64_t PieceWireBytes(const autodist::proto::TensorPiece& piece, size_t data_bytes) {
  return static_cast<int64_t>(data_bytes) + piece.indices_size() * int64_t{8};
}

// A tensor rebuilt from pieces.
struct ReceivedTensor {
  tensor::Tensor dense;  // dense tensors (decoded to float32); for sparse ones the rows
  std::optional<tensor::Tensor> indices;  // int64 [n] for row-sparse gradients
  int32_t replicas = 1;                   // how many replicas' gradients it sums
  // What arrived for it on the wire: data bytes as sent (encoded) plus 8 per index (row or
  // TOPK), so that traffic statistics show what compression saved.
  int64_t wire_bytes = 0;
  bool is_sparse() const { return indices.has_value(); }
};

class PieceAssembler {
 public:
  // `peer` names the sender in errors; a tensor (or the sum of all tensors) announcing more than
  // `max_total_bytes` is rejected before anything is allocated. Dense tensors are received into
  // the host staging memory of `staging`'s devices (tensor::Tensor::HostStaging: pinned for
  // CUDA), for values that go on to a GPU (GPU workers' parameter-server replies); the CPU's: as
  // any host tensor.
  PieceAssembler(std::string peer, int64_t max_total_bytes,
                 tensor::DeviceKind staging = tensor::DeviceKind::kCpu);

  // Adds one piece. Throws InvalidArgument naming the peer and the tensor for an unknown data
  // type, negative or overflowing dims, a piece out of order or past the end, a repeated name, a
  // sparse header whose index count does not match its rows, the byte limit, an unknown
  // encoding, an encoding on anything but a dense float32 tensor, a FLOAT16 piece of an odd byte
  // count, and TOPK indices out of range, not strictly ascending (duplicates) or more than the
  // tensor has elements.
  void Add(const autodist::proto::TensorPiece& piece);

  // Writes the next `length` bytes of a piece's data to `destination` (reading them off a
  // socket, say), or throws.
  using Fill = std::function<void(char* destination, size_t length)>;
  // Adds a piece whose `length` data bytes are not in `piece.data()` (which must be empty) but
  // come from `fill`, after the same checks as Add and before anything is read. Data stored as
  // sent (RAW) goes straight into the tensor; encoded data is decoded from a scratch copy.
  void AddFrom(const autodist::proto::TensorPiece& piece, int64_t length, const Fill& fill);

  // Every tensor received, by name. Throws InvalidArgument naming the first incomplete one.
  std::map<std::string, ReceivedTensor> Finish();

  int64_t bytes_received() const { return bytes_received_; }

 private:
  struct Pending {
    ReceivedTensor tensor;
    autodist::proto::TensorPiece::Encoding encoding = autodist::proto::TensorPiece::RAW;
    int64_t expected_bytes = 0;  // of data, as sent
    int64_t received_bytes = 0;
    std::vector<int64_t> positions;  // TOPK: where each value goes
  };

  // Checks the first piece of a tensor and allocates it.
  Pending Start(const autodist::proto::TensorPiece& piece);
  // Checks and keeps the TOPK positions of `piece` (its first) in `pending`.
  void StartTopK(const autodist::proto::TensorPiece& piece, Pending& pending);
  // Checks a piece of `length` data bytes against its tensor (started on its first piece).
  Pending& Accept(const autodist::proto::TensorPiece& piece, int64_t length);
  // Decodes `length` bytes of tensor `name`'s data into the tensor.
  void Store(const std::string& name, const char* data, size_t length, Pending& pending) const;
  // Counts `length` bytes as received for `pending`.
  void Count(int64_t length, Pending& pending);

  std::string peer_;
  int64_t max_total_bytes_;
  tensor::DeviceKind staging_;
  int64_t announced_bytes_ = 0;
  int64_t bytes_received_ = 0;
  std::map<std::string, Pending> tensors_;
};

// Convenience for small messages: every tensor of `values` as pieces, in name order.
void EmitTensors(const std::map<std::string, tensor::Tensor>& values, int64_t piece_bytes,
                 const PieceSink& sink);

}  // namespace autodist::rpc
