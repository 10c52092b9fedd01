#include "runtime/coordinator/client.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/rpc/grpc_helpers.h"

namespace autodist::coordinator {
namespace {

using autodist::proto::InitialValuesMessage;
using autodist::proto::ReduceMessage;
using autodist::proto::TensorPiece;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// Backoff between Register attempts while the coordinator is unreachable: short at first (the
// chief usually starts within a second), never so long that a late start is noticed late.
constexpr milliseconds kFirstRetryDelay{50};
constexpr milliseconds kMaxRetryDelay{1000};

// A wait as the protocol carries it: 0 would mean "the coordinator's limit".
int64_t WaitMs(milliseconds wait) { return std::max<int64_t>(1, wait.count()); }

// Reads every message of a server stream into `consume` and returns the call's status. When
// `consume` rejects a message the call is cancelled and finished before the error propagates,
// so the stream is never left open.
template <typename Message, typename Reader, typename Consume>
grpc::Status ReadAll(grpc::ClientContext& context, Reader& reader, Consume&& consume) {
  Message message;
  try {
    while (reader.Read(&message)) consume(message);
  } catch (const Error&) {
    context.TryCancel();
    reader.Finish();
    throw;
  }
  return reader.Finish();
}

std::map<std::string, tensor::Tensor> Dense(rpc::PieceAssembler& assembler) {
  std::map<std::string, tensor::Tensor> out;
  for (auto& [name, received] : assembler.Finish()) out.emplace(name, std::move(received.dense));
  return out;
}

}  // namespace

CoordinatorClient::CoordinatorClient(std::string endpoint, CoordinatorClientOptions options)
    : endpoint_(std::move(endpoint)),
      options_(options),
      stub_(autodist::proto::Coordinator::NewStub(
          rpc::MakeChannel(endpoint_, rpc::WithCredentials(options.credentials)))) {}

std::string CoordinatorClient::What(const char* call) const {
  return fmt::format("coordinator ({}): {}", endpoint_, call);
}

void CoordinatorClient::SetDeadline(grpc::ClientContext* context, milliseconds timeout) const {
  context->set_deadline(std::chrono::system_clock::now() + timeout);
}

RegisterResult CoordinatorClient::Register(const MemberInfo& self, const std::string& job_id,
                                           milliseconds wait) {
  autodist::proto::RegisterRequest request;
  request.set_node(self.node);
  request.set_endpoint(self.endpoint);
  request.set_role(ToProto(self.role));
  request.set_pid(self.pid);
  request.set_job_id(job_id);
  const SteadyClock::time_point deadline = SteadyClock::now() + wait;
  milliseconds delay = kFirstRetryDelay;
  while (true) {
    const auto remaining = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now());
    request.set_wait_ms(WaitMs(remaining));
    grpc::ClientContext context;
    SetDeadline(&context, std::max(remaining, milliseconds(0)) + options_.call_timeout);
    autodist::proto::RegisterReply reply;
    const grpc::Status status = stub_->Register(&context, request, &reply);
    if (status.ok()) return RegisterResultFromProto(reply);
    // Only an unreachable coordinator is worth another try: every other answer is final.
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        SteadyClock::now() + delay >= deadline) {
      rpc::ThrowRpcError(status, What("Register"));
    }
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, kMaxRetryDelay);
  }
}

void CoordinatorClient::Barrier(const std::string& node, const std::string& name,
                                milliseconds wait) {
  int64_t generation = 0;
  {
    std::lock_guard lock(barrier_mutex_);
    generation = barrier_generations_[{node, name}];
  }
  autodist::proto::BarrierRequest request;
  request.set_node(node);
  request.set_name(name);
  request.set_generation(generation);
  request.set_wait_ms(WaitMs(wait));
  grpc::ClientContext context;
  SetDeadline(&context, wait + options_.call_timeout);
  autodist::proto::BarrierReply reply;
  const grpc::Status status = stub_->Barrier(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Barrier"));
  // Counted only once passed: a retry after a failure must join the same generation.
  std::lock_guard lock(barrier_mutex_);
  barrier_generations_[{node, name}] = generation + 1;
}

HeartbeatResult CoordinatorClient::Heartbeat(const std::string& node, int64_t step) {
  autodist::proto::HeartbeatRequest request;
  request.set_node(node);
  request.set_step(step);
  grpc::ClientContext context;
  SetDeadline(&context, options_.call_timeout);
  autodist::proto::HeartbeatReply reply;
  const grpc::Status status = stub_->Heartbeat(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Heartbeat"));
  return {reply.abort(), reply.reason(), reply.workers_finished()};
}

void CoordinatorClient::ReportProgress(const autodist::proto::ProgressReport& report) {
  grpc::ClientContext context;
  SetDeadline(&context, options_.call_timeout);
  autodist::proto::ProgressReply reply;
  const grpc::Status status = stub_->ReportProgress(&context, report, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("ReportProgress"));
}

StatusSnapshot CoordinatorClient::Status(milliseconds timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  autodist::proto::StatusReply reply;
  const grpc::Status status = stub_->Status(&context, autodist::proto::StatusRequest(), &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Status"));
  return StatusFromProto(reply);
}

void CoordinatorClient::Finish(const std::string& node, bool failed, const std::string& reason) {
  autodist::proto::FinishRequest request;
  request.set_node(node);
  request.set_failed(failed);
  request.set_reason(reason);
  grpc::ClientContext context;
  SetDeadline(&context, options_.call_timeout);
  autodist::proto::FinishReply reply;
  const grpc::Status status = stub_->Finish(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Finish"));
}

void CoordinatorClient::Abort(const std::string& reason) {
  autodist::proto::AbortRequest request;
  request.set_reason(reason);
  grpc::ClientContext context;
  SetDeadline(&context, options_.call_timeout);
  autodist::proto::AbortReply reply;
  const grpc::Status status = stub_->Abort(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Abort"));
}

void CoordinatorClient::PutInitialValues(const std::string& node, const InitialValues& values) {
  grpc::ClientContext context;
  SetDeadline(&context, options_.transfer_timeout);
  autodist::proto::InitialValuesReply reply;
  auto writer = stub_->PutInitialValues(&context, &reply);
  InitialValuesMessage header;
  header.mutable_header()->set_node(node);
  header.mutable_header()->set_step(values.step);
  header.mutable_header()->set_epoch(values.epoch);
  header.mutable_header()->set_batch(values.batch);
  // A failed write means the coordinator ended the call; Finish tells why.
  bool open = writer->Write(header);
  rpc::EmitTensors(values.tensors, options_.piece_bytes, [&](TensorPiece&& piece) {
    if (!open) return;
    InitialValuesMessage message;
    *message.mutable_piece() = std::move(piece);
    open = writer->Write(message);
  });
  if (open) writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) rpc::ThrowRpcError(status, What("PutInitialValues"));
}

InitialValues CoordinatorClient::GetInitialValues(const std::string& node, milliseconds wait) {
  autodist::proto::InitialValuesRequest request;
  request.set_node(node);
  request.set_wait_ms(WaitMs(wait));
  grpc::ClientContext context;
  SetDeadline(&context, wait + options_.transfer_timeout);
  auto reader = stub_->GetInitialValues(&context, request);
  const std::string what = What("GetInitialValues");
  InitialValues values;
  bool has_header = false;
  rpc::PieceAssembler assembler(what, options_.max_tensor_bytes);
  const grpc::Status status =
      ReadAll<InitialValuesMessage>(context, *reader, [&](const InitialValuesMessage& message) {
        if (!has_header) {
          AD_CHECK(message.has_header(), kInternal, "{}: the reply did not start with a header",
                   what);
          values.step = message.header().step();
          values.epoch = message.header().epoch();
          values.batch = message.header().batch();
          has_header = true;
          return;
        }
        AD_CHECK(message.has_piece(), kInternal, "{}: a second header arrived", what);
        assembler.Add(message.piece());
      });
  if (!status.ok()) rpc::ThrowRpcError(status, what);
  AD_CHECK(has_header, kInternal, "{}: the reply ended without a header", what);
  values.tensors = Dense(assembler);
  return values;
}

std::map<std::string, tensor::Tensor> CoordinatorClient::ReduceStates(
    const std::string& node, const std::string& round, int replicas,
    const std::map<std::string, tensor::Tensor>& sums, const std::set<std::string>& sum_states,
    milliseconds wait) {
  const std::string what = What("ReduceStates");
  for (const std::string& name : sum_states) {
    AD_CHECK(sums.count(name) > 0, kInvalidArgument,
             "{}: round '{}': state '{}' is to be summed, but it is not among the tensors sent",
             what, round, name);
  }
  grpc::ClientContext context;
  SetDeadline(&context, wait + options_.transfer_timeout);
  auto stream = stub_->ReduceStates(&context);
  ReduceMessage header;
  header.mutable_header()->set_node(node);
  header.mutable_header()->set_round(round);
  header.mutable_header()->set_replicas(replicas);
  header.mutable_header()->set_wait_ms(WaitMs(wait));
  auto& reductions = *header.mutable_header()->mutable_reductions();
  for (const auto& [name, value] : sums) {
    reductions[name] = sum_states.count(name) > 0 ? autodist::proto::STATE_REDUCTION_SUM
                                                  : autodist::proto::STATE_REDUCTION_MEAN;
  }
  bool open = stream->Write(header);
  rpc::EmitTensors(sums, options_.piece_bytes, [&](TensorPiece&& piece) {
    if (!open) return;
    ReduceMessage message;
    *message.mutable_piece() = std::move(piece);
    open = stream->Write(message);
  });
  // The coordinator answers only after this half-close: every sum must have arrived.
  if (open) stream->WritesDone();
  rpc::PieceAssembler assembler(what, options_.max_tensor_bytes);
  const grpc::Status status = ReadAll<TensorPiece>(
      context, *stream, [&](const TensorPiece& piece) { assembler.Add(piece); });
  if (!status.ok()) rpc::ThrowRpcError(status, fmt::format("{} round '{}'", what, round));
  return Dense(assembler);
}

void CoordinatorClient::StoreSet(const std::string& node, const std::string& key,
                                 const std::string& value) {
  autodist::proto::StoreSetRequest request;
  request.set_node(node);
  request.set_key(key);
  request.set_value(value);
  grpc::ClientContext context;
  SetDeadline(&context, options_.call_timeout);
  autodist::proto::StoreSetReply reply;
  const grpc::Status status = stub_->StoreSet(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("StoreSet"));
}

std::vector<std::string> CoordinatorClient::StoreGet(const std::string& node,
                                                     const std::vector<std::string>& keys,
                                                     milliseconds wait) {
  autodist::proto::StoreGetRequest request;
  request.set_node(node);
  for (const std::string& key : keys) request.add_keys(key);
  request.set_wait_ms(WaitMs(wait));
  grpc::ClientContext context;
  SetDeadline(&context, wait + options_.call_timeout);
  autodist::proto::StoreGetReply reply;
  const grpc::Status status = stub_->StoreGet(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("StoreGet"));
  AD_CHECK(reply.values_size() == request.keys_size(), kInternal,
           "{}: asked for {} keys, got {} values", What("StoreGet"), request.keys_size(),
           reply.values_size());
  return {reply.values().begin(), reply.values().end()};
}

}  // namespace autodist::coordinator
