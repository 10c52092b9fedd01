#include "runtime/ps/step_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::ps {
namespace {

using autodist::proto::TensorPiece;
using tensor::DType;

}  // namespace

void CheckTensorSize(const std::string& who, const TensorPiece& piece, int64_t limit) {
  const auto element =
      static_cast<int64_t>(tensor::ElementSize(static_cast<DType>(piece.data_type())));
  int64_t bytes = std::max<int64_t>(element, 1);
  for (const int64_t dim : piece.dims()) {
    if (dim < 0) return;
    if (dim != 0 && bytes > std::numeric_limits<int64_t>::max() / dim) {
      Fail(ErrorCode::kInvalidArgument, "{}: tensor '{}' is larger than the limit of {} bytes", who,
           piece.name(), limit);
    }
    bytes *= dim;
  }
  AD_CHECK(bytes <= limit, kInvalidArgument,
           "{}: tensor '{}' ({} bytes) is larger than the limit of {} bytes", who, piece.name(),
           bytes, limit);
}

PsStepCall::PsStepCall(PsStore& store, const autodist::proto::StepHeader& header,
                       int64_t max_tensor_bytes, PsStore::Clock::time_point deadline,
                       PsStore::Cancelled cancelled)
    : store_(store),
      header_(header),
      replicas_(header.replicas() > 0 ? header.replicas() : 1),
      max_tensor_bytes_(max_tensor_bytes),
      deadline_(deadline),
      cancelled_(std::move(cancelled)),
      who_(fmt::format("worker {} step {}", header.worker(), header.step())),
      assembler_(who_, rpc::kNoTotalLimit) {
  for (const autodist::proto::TensorVersion& held : header.held()) {
    AD_CHECK(held.version() >= 0, kInvalidArgument,
             "{}: the header says it holds version {} of '{}'; versions are >= 0", who_,
             held.version(), held.name());
    held_[held.name()] = HeldVersion{held.incarnation(), held.version()};
  }
  store_.WaitInitialized(deadline_, cancelled_);
}

void PsStepCall::Announce(const TensorPiece& piece) {
  if (piece.offset() != 0 || !announced_.insert(piece.name()).second) return;
  // Checked before the assembler allocates the tensor.
  store_.CheckGradientHeader(header_.worker(), piece.name(), static_cast<DType>(piece.data_type()),
                             tensor::Shape(piece.dims().begin(), piece.dims().end()),
                             piece.sparse());
  CheckTensorSize(who_, piece, max_tensor_bytes_);
  AD_CHECK(piece.replicas() == 0 || piece.replicas() == replicas_, kInvalidArgument,
           "{}: gradient '{}' sums {} replicas, the header says {}", who_, piece.name(),
           piece.replicas(), replicas_);
}

void PsStepCall::AddGradient(const TensorPiece& piece) {
  Announce(piece);
  assembler_.Add(piece);
}

void PsStepCall::AddGradientFrom(const TensorPiece& piece, int64_t length,
                                 const rpc::PieceAssembler::Fill& fill) {
  Announce(piece);
  assembler_.AddFrom(piece, length, fill);
}

PushedBytes PsStepCall::Push() {
  PsPush push;
  push.worker = header_.worker();
  push.first_replica = header_.first_replica();
  push.replicas = replicas_;
  push.step = header_.step();
  push.learning_rate = header_.learning_rate();
  PushedBytes bytes;
  for (auto& [name, received] : assembler_.Finish()) {
    bytes.wire += received.wire_bytes;
    bytes.decoded += static_cast<int64_t>(received.dense.nbytes()) +
                     (received.indices ? static_cast<int64_t>(received.indices->nbytes()) : 0);
    PsGradient gradient;
    if (received.is_sparse()) {
      gradient.sparse =
          tensor::SparseGradient{std::move(*received.indices), std::move(received.dense), {}};
    } else {
      gradient.dense = std::move(received.dense);
    }
    push.gradients.emplace(name, std::move(gradient));
  }
  versions_ = store_.Push(std::move(push));
  return bytes;
}

void PsStepCall::AwaitVersions(
    const std::function<void(const std::string& name, const PsSnapshot& snapshot)>& reply) {
  // Replies go out tensor by tensor, each as soon as its condition holds.
  for (const auto& [name, version] : versions_) {
    std::optional<HeldVersion> held;
    // Only a value that is asked for can be sent as rows.
    if (const auto it = held_.find(name); it != held_.end() && pull()) held = it->second;
    reply(name, store_.WaitForVersion(name, version, deadline_, cancelled_, who_, held));
  }
}

}  // namespace autodist::ps
