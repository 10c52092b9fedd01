// Tensors on the wire (proto/tensor_wire.proto): a tensor is sent as pieces of at most
// `piece_bytes` raw bytes each, so a message never holds a whole large tensor and the receiver
// can check every piece before it allocates. PieceAssembler is the receiving side: it validates
// each piece against what was announced (type, dims, a byte limit, contiguous offsets) and
// rebuilds dense tensors and row-sparse gradients.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "proto/tensor_wire.pb.h"
#include "runtime/ops/kernel.h"
#include "runtime/tensor/tensor.h"

namespace autodist::comm {

// 1 MiB pieces: large enough that per-message overhead is negligible, small enough that many
// tensors interleave and no message approaches gRPC's size limits.
inline constexpr int64_t kDefaultPieceBytes = int64_t{1} << 20;

using PieceSink = std::function<void(autodist::proto::TensorPiece&& piece)>;

// Emits `value` as pieces: the first carries name, type and dims (and `replicas` when > 0); each
// carries its byte offset. An empty tensor is one piece without data.
void EmitTensor(const std::string& name, const tensor::Tensor& value, int32_t replicas,
                int64_t piece_bytes, const PieceSink& sink);

// Emits a row-sparse gradient: the first piece carries the row indices and the rows' dims
// ([n, row dims...]); the rows follow as data. `dense_shape` is not sent: the receiver knows the
// variable it belongs to.
void EmitSparse(const std::string& name, const ops::SparseGradient& gradient, int32_t replicas,
                int64_t piece_bytes, const PieceSink& sink);

// A tensor rebuilt from pieces.
struct ReceivedTensor {
  tensor::Tensor dense;  // dense tensors; for sparse ones the rows ([n, row dims...])
  std::optional<tensor::Tensor> indices;  // int64 [n] for row-sparse gradients
  int32_t replicas = 1;                   // how many replicas' gradients it sums
  bool is_sparse() const { return indices.has_value(); }
};

class PieceAssembler {
 public:
  // `peer` names the sender in errors; a tensor (or the sum of all tensors) announcing more than
  // `max_total_bytes` is rejected before anything is allocated.
  PieceAssembler(std::string peer, int64_t max_total_bytes);

  // Adds one piece. Throws InvalidArgument naming the peer and the tensor for an unknown data
  // type, negative or overflowing dims, a piece out of order or past the end, a repeated name, a
  // sparse header whose index count does not match its rows, or the byte limit.
  void Add(const autodist::proto::TensorPiece& piece);

  // Every tensor received, by name. Throws InvalidArgument naming the first incomplete one.
  std::map<std::string, ReceivedTensor> Finish();

  int64_t bytes_received() const { return bytes_received_; }

 private:
  struct Pending {
    ReceivedTensor tensor;
    int64_t expected_bytes = 0;
    int64_t received_bytes = 0;
  };

  std::string peer_;
  int64_t max_total_bytes_;
  int64_t announced_bytes_ = 0;
  int64_t bytes_received_ = 0;
  std::map<std::string, Pending> tensors_;
};

// Convenience for small messages: every tensor of `values` as pieces, in name order.
void EmitTensors(const std::map<std::string, tensor::Tensor>& values, int64_t piece_bytes,
                 const PieceSink& sink);

}  // namespace autodist::comm
