#include "runtime/ps/client.h"

#include <fmt/format.h>

#include <exception>
#include <iostream>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/ps/gradient_push.h"

namespace autodist::ps {
namespace {

using autodist::proto::InitMessage;
using autodist::proto::StepMessage;
using autodist::proto::StepReply;
using autodist::proto::TensorPiece;

// Collects a Step or Pull reply stream: versions, and value pieces into `assembler`. Throws on a
// malformed reply; the caller still finishes the call.
template <typename Reader>
void ReadReplies(Reader& reader, rpc::PieceAssembler& assembler, PsValues& out) {
  StepReply reply;
  while (reader.Read(&reply)) {
    if (reply.has_version()) {
      TakeVersion(reply.version(), out);
    } else if (reply.has_value()) {
      assembler.Add(reply.value());
    }
  }
}

// Finishes a call whose replies were read (or failed to be read): the server's status wins over
// a local failure, since it says why the stream ended.
template <typename Stream>
void FinishCall(Stream& stream, grpc::ClientContext& context,
                const std::exception_ptr& local_failure, const std::string& what) {
  if (local_failure) context.TryCancel();
  const grpc::Status status = stream.Finish();
  if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
    rpc::ThrowRpcError(status, what);
  }
  if (local_failure) std::rethrow_exception(local_failure);
  if (!status.ok()) rpc::ThrowRpcError(status, what);
}

}  // namespace

PsClient::PsClient(std::string name, std::string endpoint, const rpc::RpcOptions& options,
                   std::chrono::milliseconds call_deadline, tensor::DeviceKind reply_staging)
    : name_(std::move(name)),
      endpoint_(std::move(endpoint)),
      call_deadline_(call_deadline),
      reply_staging_(reply_staging),
      credentials_(options.credentials),
      grpc_channel_(rpc::MakeChannel(endpoint_, options)),
      stub_(autodist::proto::ParameterServer::NewStub(grpc_channel_)) {}

std::string PsClient::What(const char* call) const {
  return fmt::format("parameter server {} ({}): {}", name_, endpoint_, call);
}

void PsClient::Prepare(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() + call_deadline_);
  // Until the server is first reached, a call waits for the channel to connect instead of failing
  // at the first refused connection or failed lookup: on a cluster a parameter server's name
  // resolves only once its pod is in the Service's EndpointSlice and DNS caught up, which may
  // be after the rendezvous the server joined by its address. The channel looks the name up
  // again every second (MakeChannel) until the call's deadline.
  if (reached_.load(std::memory_order_relaxed)) return;
  if (grpc_channel_->GetState(false) == GRPC_CHANNEL_READY) {
    reached_.store(true, std::memory_order_relaxed);
  } else {
    context.set_wait_for_ready(true);
  }
}

void PsClient::Init(const PsInitRequest& request) {
  const std::string what = What("Init");
  grpc::ClientContext context;
  Prepare(context);
  autodist::proto::InitReply reply;
  auto writer = stub_->Init(&context, &reply);

  InitMessage message;
  auto* header = message.mutable_header();
  for (const HostedTensor& tensor : request.tensors) {
    auto* variable = header->add_variables();
    variable->set_name(tensor.name);
    variable->set_sync(tensor.sync);
    variable->set_staleness(tensor.staleness);
    variable->set_sparse(tensor.sparse);
  }
  header->set_optimizer(request.optimizer);
  header->mutable_optimizer_options()->insert(request.optimizer_options.begin(),
                                              request.optimizer_options.end());
  header->set_num_workers(request.num_workers);
  header->set_total_replicas(request.total_replicas);
  header->set_start_step(request.start_step);
  // A failed write means the server ended the call; Finish says why.
  bool open = writer->Write(message);
  // Kept across pieces so that EmitTensor gets its buffer back (see EmitBytes).
  InitMessage part;
  const auto send = [&](bool is_value) {
    return [&, is_value](TensorPiece&& piece) {
      if (!open) return;
      *(is_value ? part.mutable_value() : part.mutable_optimizer_state()) = std::move(piece);
      open = writer->Write(part);
    };
  };
  for (const auto& [name, value] : request.values) {
    rpc::EmitTensor(name, value, 0, rpc::kDefaultPieceBytes, send(true));
  }
  for (const auto& [key, slot] : request.optimizer_state) {
    rpc::EmitTensor(key, slot, 0, rpc::kDefaultPieceBytes, send(false));
  }
  if (open) writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) rpc::ThrowRpcError(status, what);
}

PsDataChannelClient* PsClient::Channel() {
  const std::lock_guard lock(channel_mutex_);
  if (channel_known_) return channel_.get();
  grpc::ClientContext context;
  // Short: a server that cannot answer now is asked again on the next Step.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  autodist::proto::DataChannelReply reply;
  const grpc::Status status =
      stub_->DataChannel(&context, autodist::proto::DataChannelRequest(), &reply);
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    channel_known_ = true;  // a server without the channel
  } else if (status.ok()) {
    channel_known_ = true;
    if (reply.port() > 0) {
      auto channel =
          std::make_unique<PsDataChannelClient>(rpc::HostOfEndpoint(endpoint_), reply.port(),
                                                call_deadline_, credentials_, reply_staging_);
      try {
        channel->Connect();
        channel_ = std::move(channel);
      } catch (const Error& error) {
        // A network that lets only the gRPC port through: slower, but training goes on.
        std::cerr << fmt::format("{}: the data channel cannot be reached, Steps go over gRPC: {}\n",
                                 What("Step"), error.what());
      }
    }
  }
  return channel_.get();
}

PsValues PsClient::Step(const PsStepRequest& request) {
  const std::string what = What("Step");
  // Everything is checked before the call starts, so that a bad gradient sends nothing.
  for (const auto& [name, gradient] : request.gradients) CheckGradientRef(what, name, gradient);
  if (PsDataChannelClient* channel = Channel()) return channel->Step(request, encoder_, what);
  grpc::ClientContext context;
  Prepare(context);
  auto stream = stub_->Step(&context);

  StepMessage message;
  auto* header = message.mutable_header();
  header->set_worker(request.worker);
  header->set_first_replica(request.first_replica);
  header->set_replicas(request.replicas);
  header->set_step(request.step);
  header->set_learning_rate(request.learning_rate);
  header->set_pull(request.pull);
  AddHeldVersions(request, *header);
  bool open = stream->Write(message);
  StepMessage part;  // kept across pieces so that EmitTensor gets its buffer back (EmitBytes)
  observe::RuntimeMetrics& metrics = observe::ProcessMetrics();
  const rpc::PieceSink sink = [&](TensorPiece&& piece) {
    if (!open) return;
    metrics.parameter_server_sent_bytes.Inc(
        static_cast<double>(rpc::PieceWireBytes(piece, piece.data().size())));
    *part.mutable_gradient() = std::move(piece);
    open = stream->Write(part);
  };
  for (const auto& [name, gradient] : request.gradients) {
    if (!open) break;
    EmitGradient(what, request.first_replica, name, gradient, request.replicas,
                 rpc::kDefaultPieceBytes, encoder_, sink);
  }
  if (open) stream->WritesDone();

  PsValues out;
  rpc::PieceAssembler assembler(what, rpc::kNoTotalLimit, reply_staging_);
  std::exception_ptr failure;
  try {
    ReadReplies(*stream, assembler, out);
  } catch (const Error&) {
    failure = std::current_exception();
  }
  FinishCall(*stream, context, failure, what);
  TakeReplyValues(assembler, out);
  return out;
}

PsValues PsClient::Pull(const std::vector<std::string>& names, bool optimizer_state, int worker) {
  const std::string what = What("Pull");
  grpc::ClientContext context;
  Prepare(context);
  autodist::proto::PullRequest request;
  request.set_worker(worker);
  for (const std::string& name : names) request.add_names(name);
  request.set_optimizer_state(optimizer_state);
  auto reader = stub_->Pull(&context, request);

  PsValues out;
  rpc::PieceAssembler assembler(what, rpc::kNoTotalLimit, reply_staging_);
  std::exception_ptr failure;
  try {
    ReadReplies(*reader, assembler, out);
  } catch (const Error&) {
    failure = std::current_exception();
  }
  FinishCall(*reader, context, failure, what);
  TakeReplyValues(assembler, out);
  return out;
}

autodist::proto::SaveReply PsClient::Save(const std::string& path, int worker) {
  grpc::ClientContext context;
  Prepare(context);
  autodist::proto::SaveRequest request;
  request.set_worker(worker);
  request.set_path(path);
  autodist::proto::SaveReply reply;
  const grpc::Status status = stub_->Save(&context, request, &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Save"));
  return reply;
}

PsStats PsClient::Stats() {
  grpc::ClientContext context;
  Prepare(context);
  autodist::proto::StatsReply reply;
  const grpc::Status status = stub_->Stats(&context, autodist::proto::StatsRequest(), &reply);
  if (!status.ok()) rpc::ThrowRpcError(status, What("Stats"));
  PsStats stats;
  stats.bytes_pushed = reply.bytes_pushed();
  stats.bytes_pushed_decoded = reply.bytes_pushed_decoded();
  stats.bytes_pulled = reply.bytes_pulled();
  stats.version = reply.version();
  stats.steps = reply.steps();
  stats.updates = reply.updates();
  stats.pushes = reply.pushes();
  return stats;
}

}  // namespace autodist::ps
