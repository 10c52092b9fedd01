#include "runtime/rpc/tensor_wire.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/common/error.h"
#include "runtime/tensor/float16.h"

namespace autodist::rpc {
namespace {

using autodist::proto::TensorPiece;
using tensor::DType;
using tensor::Tensor;

// Sends `total` bytes from `bytes` as pieces, the first one built on `first`. Pieces are cut at
// multiples of `unit` (the encoded element size), so that an encoded element never straddles two
// pieces and each piece decodes on its own.
void EmitBytes(const std::string& name, const char* bytes, int64_t total, int64_t unit,
               int64_t piece_bytes, TensorPiece first, const PieceSink& sink) {
  AD_CHECK(piece_bytes > 0, kInternal, "piece size must be positive, got {}", piece_bytes);
  const int64_t step = std::max(unit, piece_bytes - piece_bytes % unit);
  int64_t offset = 0;
  // One piece object for all pieces: a sink that moves it into a message it keeps (the PS client
  // and service do) swaps that message's previous piece back, so the data buffer is reused instead
  // of a fresh 1 MiB allocation per piece, which glibc often returns to the OS and then faults in
  // again.
  TensorPiece piece = std::move(first);
  for (;;) {
    piece.set_name(name);
    piece.set_offset(offset);
    const int64_t length = std::min(step, total - offset);
    if (length > 0) piece.mutable_data()->assign(bytes + offset, static_cast<size_t>(length));
    offset += length;
    sink(std::move(piece));
    if (offset >= total) break;
    // After the sink's move the piece is still a valid message (protobuf swaps on move); Clear()
    // empties it but keeps the data string's capacity.
    piece.Clear();  // NOLINT(bugprone-use-after-move)
  }
}

void EmitBytes(const std::string& name, const Tensor& value, int64_t piece_bytes, TensorPiece first,
               const PieceSink& sink) {
  EmitBytes(name, static_cast<const char*>(value.raw()), static_cast<int64_t>(value.nbytes()), 1,
            piece_bytes, std::move(first), sink);
}

TensorPiece Header(DType dtype, const tensor::Shape& shape, int32_t replicas) {
  TensorPiece header;
  header.set_data_type(static_cast<int32_t>(dtype));
  for (const int64_t dim : shape) header.add_dims(dim);
  if (replicas > 0) header.set_replicas(replicas);
  return header;
}

TensorPiece Header(const Tensor& value, int32_t replicas) {
  return Header(value.dtype(), value.shape(), replicas);
}

// Elements of `dims`, or an error when a dim is negative or the product overflows the limit.
int64_t CheckedBytes(const TensorPiece& piece, DType dtype, int64_t limit,
                     const std::string& peer) {
  const auto element = static_cast<int64_t>(tensor::ElementSize(dtype));
  int64_t bytes = element;
  for (const int64_t dim : piece.dims()) {
    AD_CHECK(dim >= 0, kInvalidArgument, "{}: tensor '{}' has a negative dimension {}", peer,
             piece.name(), dim);
    if (dim != 0 && bytes > limit / dim) {
      Fail(ErrorCode::kInvalidArgument, "{}: tensor '{}' is larger than the limit of {} bytes",
           peer, piece.name(), limit);
    }
    bytes *= dim;
  }
  return bytes;
}

}  // namespace

TensorPiece TensorHeader(const std::string& name, const Tensor& value, int32_t replicas) {
  TensorPiece header = Header(value, replicas);
  header.set_name(name);
  return header;
}

TensorPiece SparseHeader(const std::string& name, const tensor::SparseGradient& gradient,
                         int32_t replicas) {
  TensorPiece header = TensorHeader(name, gradient.values, replicas);
  header.set_sparse(true);
  const auto* indices = gradient.indices.data<int64_t>();
  header.mutable_indices()->Add(indices, indices + gradient.indices.numel());
  return header;
}

void EmitTensor(const std::string& name, const Tensor& value, int32_t replicas, int64_t piece_bytes,
                const PieceSink& sink) {
  EmitBytes(name, value, piece_bytes, Header(value, replicas), sink);
}

void EmitSparse(const std::string& name, const tensor::SparseGradient& gradient, int32_t replicas,
                int64_t piece_bytes, const PieceSink& sink) {
  EmitBytes(name, gradient.values, piece_bytes, SparseHeader(name, gradient, replicas), sink);
}

void EmitHalves(const std::string& name, const tensor::Shape& shape,
                const std::vector<uint16_t>& halves, int32_t replicas, int64_t piece_bytes,
                const PieceSink& sink) {
  AD_CHECK(static_cast<int64_t>(halves.size()) == tensor::NumElements(shape), kInternal,
           "tensor '{}': {} halves for shape {}", name, halves.size(),
           tensor::ShapeToString(shape));
  TensorPiece header = Header(DType::kFloat32, shape, replicas);
  header.set_encoding(TensorPiece::FLOAT16);
  EmitBytes(name, reinterpret_cast<const char*>(halves.data()),
            static_cast<int64_t>(halves.size() * sizeof(uint16_t)), sizeof(uint16_t), piece_bytes,
            std::move(header), sink);
}

void EmitTopK(const std::string& name, const tensor::Shape& shape,
              const std::vector<int64_t>& indices, const std::vector<float>& values,
              int32_t replicas, int64_t piece_bytes, const PieceSink& sink) {
  AD_CHECK(indices.size() == values.size(), kInternal, "tensor '{}': {} indices for {} values",
           name, indices.size(), values.size());
  TensorPiece header = Header(DType::kFloat32, shape, replicas);
  header.set_encoding(TensorPiece::TOPK);
  header.mutable_indices()->Add(indices.begin(), indices.end());
  EmitBytes(name, reinterpret_cast<const char*>(values.data()),
            static_cast<int64_t>(values.size() * sizeof(float)), sizeof(float), piece_bytes,
            std::move(header), sink);
}

void EmitTensors(const std::map<std::string, Tensor>& values, int64_t piece_bytes,
                 const PieceSink& sink) {
  for (const auto& [name, value] : values) EmitTensor(name, value, 0, piece_bytes, sink);
}

PieceAssembler::PieceAssembler(std::string peer, int64_t max_total_bytes,
                               tensor::DeviceKind staging)
    : peer_(std::move(peer)), max_total_bytes_(max_total_bytes), staging_(staging) {}

void PieceAssembler::Add(const TensorPiece& piece) {
  const auto length = static_cast<int64_t>(piece.data().size());
  Pending& pending = Accept(piece, length);
  if (length > 0) Store(piece.name(), piece.data().data(), static_cast<size_t>(length), pending);
  Count(length, pending);
}

void PieceAssembler::AddFrom(const TensorPiece& piece, int64_t length, const Fill& fill) {
  AD_CHECK(piece.data().empty(), kInternal, "{}: tensor '{}': AddFrom with data in the piece",
           peer_, piece.name());
  AD_CHECK(length >= 0, kInvalidArgument, "{}: tensor '{}': a piece of {} bytes", peer_,
           piece.name(), length);
  Pending& pending = Accept(piece, length);
  if (length > 0) {
    if (pending.encoding == TensorPiece::RAW) {
      // Stored as sent: straight into the tensor, no copy in between.
      fill(static_cast<char*>(pending.tensor.dense.raw()) + pending.received_bytes,
           static_cast<size_t>(length));
    } else {
      std::string encoded(static_cast<size_t>(length), '\0');
      fill(encoded.data(), encoded.size());
      Store(piece.name(), encoded.data(), encoded.size(), pending);
    }
  }
  Count(length, pending);
}

PieceAssembler::Pending& PieceAssembler::Accept(const TensorPiece& piece, int64_t length) {
  AD_CHECK(!piece.name().empty(), kInvalidArgument, "{}: a tensor piece has no name", peer_);
  auto it = tensors_.find(piece.name());
  if (it == tensors_.end()) {
    it = tensors_.emplace(piece.name(), Start(piece)).first;
  } else {
    AD_CHECK(it->second.received_bytes < it->second.expected_bytes, kInvalidArgument,
             "{}: tensor '{}' was sent twice", peer_, piece.name());
    AD_CHECK(piece.dims_size() == 0 && piece.indices_size() == 0 && !piece.sparse() &&
                 piece.encoding() == TensorPiece::RAW,
             kInvalidArgument, "{}: only the first piece of tensor '{}' may carry its header",
             peer_, piece.name());
  }
  Pending& pending = it->second;
  AD_CHECK(piece.offset() == pending.received_bytes, kInvalidArgument,
           "{}: tensor '{}': piece at byte offset {} where {} was expected", peer_, piece.name(),
           piece.offset(), pending.received_bytes);
  AD_CHECK(length <= pending.expected_bytes - pending.received_bytes, kInvalidArgument,
           "{}: tensor '{}': {} bytes past its end ({} bytes announced)", peer_, piece.name(),
           pending.received_bytes + length - pending.expected_bytes, pending.expected_bytes);
  return pending;
}

void PieceAssembler::Count(int64_t length, Pending& pending) {
  pending.received_bytes += length;
  pending.tensor.wire_bytes += length;
  bytes_received_ += length;
}

PieceAssembler::Pending PieceAssembler::Start(const TensorPiece& piece) {
  AD_CHECK(piece.offset() == 0, kInvalidArgument,
           "{}: piece of tensor '{}' at offset {} arrived before its first piece", peer_,
           piece.name(), piece.offset());
  const auto dtype = static_cast<DType>(piece.data_type());
  const size_t element = tensor::ElementSize(dtype);
  AD_CHECK(element > 0 && (dtype == DType::kFloat32 || dtype == DType::kInt64 ||
                           dtype == DType::kFloat64 || dtype == DType::kInt32),
           kInvalidArgument, "{}: tensor '{}' has unsupported data type {}", peer_, piece.name(),
           piece.data_type());
  Pending pending;
  pending.encoding = piece.encoding();
  AD_CHECK(TensorPiece::Encoding_IsValid(pending.encoding), kInvalidArgument,
           "{}: tensor '{}' has unknown encoding {}; expected RAW (0), FLOAT16 (1) or TOPK (2)",
           peer_, piece.name(), static_cast<int>(pending.encoding));
  AD_CHECK(pending.encoding == TensorPiece::RAW || (dtype == DType::kFloat32 && !piece.sparse()),
           kInvalidArgument,
           "{}: tensor '{}' is encoded as {}, which only dense float32 tensors may be", peer_,
           piece.name(), TensorPiece::Encoding_Name(pending.encoding));
  // The limit applies to what is allocated: the decoded tensor (and the indices kept with it).
  const int64_t remaining = max_total_bytes_ - announced_bytes_;
  const int64_t bytes = CheckedBytes(piece, dtype, remaining, peer_);
  AD_CHECK(bytes <= remaining, kInvalidArgument,
           "{}: tensor '{}' ({} bytes) is larger than the limit of {} bytes", peer_, piece.name(),
           bytes, max_total_bytes_);
  pending.expected_bytes = bytes;
  const int64_t index_bytes = piece.indices_size() * static_cast<int64_t>(sizeof(int64_t));
  if (piece.sparse()) {
    AD_CHECK(piece.dims_size() >= 1 && piece.indices_size() == piece.dims(0), kInvalidArgument,
             "{}: sparse tensor '{}' has {} row indices for {} rows", peer_, piece.name(),
             piece.indices_size(), piece.dims_size() >= 1 ? piece.dims(0) : 0);
    pending.tensor.indices = Tensor::FromVector<int64_t>(
        {piece.indices_size()},
        std::vector<int64_t>(piece.indices().begin(), piece.indices().end()));
  } else if (pending.encoding != TensorPiece::TOPK) {
    AD_CHECK(piece.indices_size() == 0, kInvalidArgument,
             "{}: dense tensor '{}' carries row indices", peer_, piece.name());
  }
  AD_CHECK(bytes + index_bytes <= remaining, kInvalidArgument,
           "{}: tensor '{}' is larger than the limit of {} bytes", peer_, piece.name(),
           max_total_bytes_);
  announced_bytes_ += bytes + index_bytes;
  pending.tensor.wire_bytes = index_bytes;
  const tensor::Shape shape(piece.dims().begin(), piece.dims().end());
  if (pending.encoding == TensorPiece::TOPK) {
    StartTopK(piece, pending);
    pending.tensor.dense = Tensor::Zeros(dtype, shape);
  } else {
    if (pending.encoding == TensorPiece::FLOAT16) pending.expected_bytes = bytes / 2;
    // Every byte is about to be copied in from the pieces: have the pages mapped up front (a
    // buffer reused from the pool is; a fresh one is populated in one call). Staging memory for
    // a device is mapped (pinned) when it is made.
    pending.tensor.dense = staging_ == tensor::DeviceKind::kCpu
                               ? Tensor::Prefaulted(dtype, shape)
                               : Tensor::HostStaging(dtype, shape, staging_);
  }
  pending.tensor.replicas = piece.replicas() > 0 ? piece.replicas() : 1;
  return pending;
}

void PieceAssembler::StartTopK(const TensorPiece& piece, Pending& pending) {
  const int64_t elements = pending.expected_bytes / static_cast<int64_t>(sizeof(float));
  const int64_t count = piece.indices_size();
  AD_CHECK(count <= elements, kInvalidArgument,
           "{}: TOPK tensor '{}' sends {} elements of a tensor of {}", peer_, piece.name(), count,
           elements);
  // Strictly ascending: no position is written twice, and the check is one pass.
  int64_t previous = -1;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t index = piece.indices(static_cast<int>(i));
    AD_CHECK(index >= 0 && index < elements, kInvalidArgument,
             "{}: TOPK tensor '{}': index {} is outside its {} elements", peer_, piece.name(),
             index, elements);
    AD_CHECK(index > previous, kInvalidArgument,
             "{}: TOPK tensor '{}': index {} follows {}; indices must be strictly ascending "
             "(no duplicates)",
             peer_, piece.name(), index, previous);
    previous = index;
  }
  pending.positions.assign(piece.indices().begin(), piece.indices().end());
  pending.expected_bytes = count * static_cast<int64_t>(sizeof(float));
}

void PieceAssembler::Store(const std::string& name, const char* data, size_t length,
                           Pending& pending) const {
  auto* target = static_cast<char*>(pending.tensor.dense.raw());
  switch (pending.encoding) {
    case TensorPiece::FLOAT16: {
      AD_CHECK(length % sizeof(uint16_t) == 0, kInvalidArgument,
               "{}: FLOAT16 tensor '{}': a piece of {} bytes, not a whole number of halves", peer_,
               name, length);
      // Through a small aligned block: the piece's bytes carry no alignment guarantee, and a
      // full-size copy of them is what decoding piece by piece avoids.
      float* out = reinterpret_cast<float*>(target) + pending.received_bytes / 2;
      constexpr size_t kBlock = 2048;
      std::array<uint16_t, kBlock> halves{};
      for (size_t done = 0; done < length / 2; done += kBlock) {
        const size_t count = std::min(kBlock, length / 2 - done);
        std::memcpy(halves.data(), data + 2 * done, 2 * count);
        tensor::HalvesToFloats(halves.data(), count, out + done);
      }
      break;
    }
    case TensorPiece::TOPK: {
      AD_CHECK(length % sizeof(float) == 0, kInvalidArgument,
               "{}: TOPK tensor '{}': a piece of {} bytes, not a whole number of float32 values",
               peer_, name, length);
      auto* out = reinterpret_cast<float*>(target);
      const auto first = static_cast<size_t>(pending.received_bytes / 4);
      for (size_t i = 0; i < length / 4; ++i) {
        std::memcpy(&out[pending.positions[first + i]], data + 4 * i, sizeof(float));
      }
      break;
    }
    default:
      std::memcpy(target + pending.received_bytes, data, length);
  }
}

std::map<std::string, ReceivedTensor> PieceAssembler::Finish() {
  std::map<std::string, ReceivedTensor> out;
  for (auto& [name, pending] : tensors_) {
    AD_CHECK(pending.received_bytes == pending.expected_bytes, kInvalidArgument,
             "{}: tensor '{}' is incomplete: {} of {} bytes arrived", peer_, name,
             pending.received_bytes, pending.expected_bytes);
    out.emplace(name, std::move(pending.tensor));
  }
  tensors_.clear();
  return out;
}

}  // namespace autodist::rpc
