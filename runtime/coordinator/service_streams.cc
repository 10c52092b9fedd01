// The coordinator's streaming RPCs: the chief's upload of the initial values, their download by
// the other members, and the reduction of replica-local state. Tensors are read and written
// without the lock; only the bookkeeping and the waiting hold it.
#include <fmt/format.h>

#include <utility>

#include "runtime/common/error.h"
#include "runtime/coordinator/service.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/rpc/tensor_wire.h"

namespace autodist::coordinator {
namespace {

using autodist::proto::InitialValuesMessage;
using autodist::proto::ReduceMessage;
using autodist::proto::TensorPiece;

// Reads the pieces that follow a stream's header until the sender half-closes, and rebuilds the
// tensors. `peer` names the call and the sender in errors.
template <typename Message, typename Stream>
TensorMap ReadTensors(Stream* stream, const std::string& peer, int64_t max_bytes) {
  rpc::PieceAssembler assembler(peer, max_bytes);
  Message message;
  while (stream->Read(&message)) {
    AD_CHECK(message.has_piece(), kInvalidArgument,
             "{}: a second header arrived; only tensor pieces may follow the header", peer);
    AD_CHECK(!message.piece().sparse(), kInvalidArgument,
             "{}: tensor '{}' is sparse; expected dense tensors", peer, message.piece().name());
    assembler.Add(message.piece());
  }
  TensorMap tensors;
  for (auto& [name, received] : assembler.Finish()) {
    tensors.emplace(name, std::move(received.dense));
  }
  return tensors;
}

grpc::Status Cancelled(const std::string& what) {
  return {grpc::StatusCode::CANCELLED, fmt::format("{}: the caller went away", what)};
}

}  // namespace

grpc::Status CoordinatorService::PutInitialValues(grpc::ServerContext* context,
                                                  grpc::ServerReader<InitialValuesMessage>* reader,
                                                  autodist::proto::InitialValuesReply* reply) {
  return rpc::Serve([&]() -> grpc::Status {
    InitialValuesMessage first;
    AD_CHECK(reader->Read(&first) && first.has_header(), kInvalidArgument,
             "PutInitialValues: the stream must start with a header naming the uploader");
    auto values = std::make_shared<Upload>();
    values->header = first.header();
    const std::string& node = values->header.node();
    {
      std::lock_guard lock(mutex_);
      CheckOpen();
      const MemberInfo& member = job_.RegisteredWorker(node, "PutInitialValues");
      if (job_.failed()) return Aborted(node);
      AD_CHECK(member.rank == 0, kInvalidArgument,
               "PutInitialValues: node '{}' is not the chief; only the chief '{}' uploads the "
               "initial values",
               node, job_.chief().node);
      AD_CHECK(initial_values_ == nullptr, kFailedPrecondition,
               "PutInitialValues: the chief '{}' uploaded the initial values already; they are "
               "uploaded once per job",
               node);
    }
    AD_CHECK(
        values->header.step() >= 0 && values->header.epoch() >= 0 && values->header.batch() >= 0,
        kInvalidArgument,
        "PutInitialValues: the chief '{}' sent a negative resume point (step {}, epoch {}, "
        "batch {})",
        node, values->header.step(), values->header.epoch(), values->header.batch());
    values->tensors = ReadTensors<InitialValuesMessage>(
        reader, fmt::format("PutInitialValues from the chief '{}'", node),
        options_.max_tensor_bytes);
    // A cancelled upload ends like a complete one; storing it could drop tensors.
    if (context->IsCancelled()) return Cancelled("PutInitialValues");
    int64_t bytes = 0;
    for (const auto& [name, value] : values->tensors) bytes += static_cast<int64_t>(value.nbytes());
    reply->set_tensors(static_cast<int64_t>(values->tensors.size()));
    reply->set_bytes(bytes);

    std::lock_guard lock(mutex_);
    CheckOpen();
    AD_CHECK(initial_values_ == nullptr, kFailedPrecondition,
             "PutInitialValues: the chief '{}' uploaded the initial values twice at once", node);
    initial_values_ = std::move(values);
    changed_.notify_all();
    return grpc::Status::OK;
  });
}

grpc::Status CoordinatorService::GetInitialValues(
    grpc::ServerContext* context, const autodist::proto::InitialValuesRequest* request,
    grpc::ServerWriter<InitialValuesMessage>* writer) {
  return rpc::Serve([&]() -> grpc::Status {
    const std::string& node = request->node();
    const std::string what = fmt::format("GetInitialValues: node '{}'", node);
    std::shared_ptr<const Upload> values;
    {
      std::unique_lock lock(mutex_);
      CheckOpen();
      job_.Member(node, "GetInitialValues");
      if (job_.failed()) return Aborted(node);
      const WaitEnd end =
          WaitFor(lock, context, request->wait_ms(), [this] { return initial_values_ != nullptr; });
      if (end != WaitEnd::kReady) {
        return WaitError(
            end, node, what, request->wait_ms(),
            fmt::format("the chief '{}' to upload the initial values", job_.chief().node));
      }
      values = initial_values_;
    }
    InitialValuesMessage header;
    *header.mutable_header() = values->header;
    bool open = writer->Write(header);
    rpc::EmitTensors(values->tensors, rpc::kDefaultPieceBytes, [&](TensorPiece&& piece) {
      if (!open) return;
      InitialValuesMessage message;
      *message.mutable_piece() = std::move(piece);
      open = writer->Write(message);
    });
    return open ? grpc::Status::OK : Cancelled(what);
  });
}

grpc::Status CoordinatorService::ReduceStates(
    grpc::ServerContext* context, grpc::ServerReaderWriter<TensorPiece, ReduceMessage>* stream) {
  return rpc::Serve([&]() -> grpc::Status {
    ReduceMessage first;
    AD_CHECK(stream->Read(&first) && first.has_header(), kInvalidArgument,
             "ReduceStates: the stream must start with a header naming the worker and the round");
    const autodist::proto::ReduceHeader header = first.header();
    const std::string& node = header.node();
    int rank = 0;
    {
      // Checked before the tensors are read: a stranger's upload is refused up front.
      std::lock_guard lock(mutex_);
      CheckOpen();
      rank = job_.RegisteredWorker(node, "ReduceStates").rank;
    }
    const std::string what =
        fmt::format("ReduceStates round '{}': worker '{}'", header.round(), node);
    ReduceSubmission submission;
    submission.replicas = header.replicas();
    for (const auto& [name, reduction] : header.reductions()) {
      submission.reductions.emplace(name, reduction);
    }
    submission.sums = ReadTensors<ReduceMessage>(stream, what, options_.max_tensor_bytes);
    if (context->IsCancelled()) return Cancelled(what);

    std::shared_ptr<const TensorMap> result;
    {
      std::unique_lock lock(mutex_);
      CheckOpen();
      if (job_.failed()) return Aborted(node);
      try {
        rounds_.Submit(header.round(), rank, std::move(submission));
      } catch (const Error&) {
        changed_.notify_all();  // a mismatch fails the round for those already waiting
        throw;
      }
      changed_.notify_all();
      const WaitEnd end = WaitFor(lock, context, header.wait_ms(), [&] {
        return rounds_.Result(header.round()) != nullptr ||
               rounds_.Failure(header.round()).has_value();
      });
      if (end != WaitEnd::kReady) {
        const std::string missing = ListNodes(rounds_.Missing(header.round()));
        rounds_.Withdraw(header.round(), rank);
        return WaitError(end, node, what, header.wait_ms(), missing + " to submit their sums");
      }
      if (auto failure = rounds_.Failure(header.round())) {
        return {grpc::StatusCode::FAILED_PRECONDITION,
                fmt::format("ReduceStates round '{}' failed: {}", header.round(), *failure)};
      }
      result = rounds_.Result(header.round());
      rounds_.Collected(header.round(), rank);
    }
    bool open = true;
    rpc::EmitTensors(*result, rpc::kDefaultPieceBytes, [&](TensorPiece&& piece) {
      if (open) open = stream->Write(piece);
    });
    return open ? grpc::Status::OK : Cancelled(what);
  });
}

}  // namespace autodist::coordinator
