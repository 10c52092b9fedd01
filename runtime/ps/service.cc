#include "runtime/ps/service.h"

#include <fmt/format.h>

#include <functional>
#include <set>
#include <string>
#include <utility>

#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/ps/data_channel_server.h"
#include "runtime/ps/step_call.h"
#include "runtime/rpc/grpc_helpers.h"

namespace autodist::ps {
namespace {

using autodist::proto::InitMessage;
using autodist::proto::StepMessage;
using autodist::proto::StepReply;
using autodist::proto::TensorPiece;

// The tensor an optimizer slot "<tensor>/<slot>" belongs to ("" when malformed).
std::string SlotOwner(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

// Writes each piece as a reply's value. `reply` is kept across the pieces of a tensor, so that
// the emitter gets its buffer back (tensor_wire.cc, EmitBytes).
rpc::PieceSink ReplySink(const std::function<bool(const StepReply&)>& write, StepReply& reply,
                         const std::string& who) {
  return [&write, &reply, &who](TensorPiece&& piece) {
    *reply.mutable_value() = std::move(piece);
    AD_CHECK(write(reply), kUnavailable, "{}: the reply stream closed", who);
  };
}

PsInitRequest FromHeader(const autodist::proto::InitHeader& header) {
  PsInitRequest request;
  for (const auto& variable : header.variables()) {
    request.tensors.push_back(
        {variable.name(), variable.sync(), variable.staleness(), variable.sparse()});
  }
  request.optimizer = header.optimizer();
  request.optimizer_options.insert(header.optimizer_options().begin(),
                                   header.optimizer_options().end());
  request.num_workers = header.num_workers();
  request.total_replicas = header.total_replicas();
  request.start_step = header.start_step();
  return request;
}

}  // namespace

ParameterServerService::ParameterServerService(ParameterServerOptions options)
    : options_(options) {}

grpc::Status ParameterServerService::Init(grpc::ServerContext* /*context*/,
                                          grpc::ServerReader<InitMessage>* reader,
                                          autodist::proto::InitReply* reply) {
  return rpc::Serve([&] {
    InitMessage message;
    AD_CHECK(reader->Read(&message) && message.has_header(), kInvalidArgument,
             "Init: the first message must be the header");
    // Fail before megabytes of values are read for nothing.
    AD_CHECK(!store_.initialized(), kFailedPrecondition,
             "Init: the parameter server is already initialized; the chief sends Init once");
    PsInitRequest request = FromHeader(message.header());
    std::set<std::string> hosted;
    for (const HostedTensor& spec : request.tensors) hosted.insert(spec.name);
    std::set<std::string> announced;  // "v:<name>" / "s:<key>"

    rpc::PieceAssembler values("Init: values", rpc::kNoTotalLimit);
    rpc::PieceAssembler state("Init: optimizer state", rpc::kNoTotalLimit);
    while (reader->Read(&message)) {
      const bool is_value = message.has_value();
      AD_CHECK(is_value || message.has_optimizer_state(), kInvalidArgument,
               "Init: only value and optimizer_state pieces may follow the header");
      const TensorPiece& piece = is_value ? message.value() : message.optimizer_state();
      if (piece.offset() == 0 && announced.insert((is_value ? "v:" : "s:") + piece.name()).second) {
        const std::string owner = is_value ? piece.name() : SlotOwner(piece.name());
        AD_CHECK(hosted.contains(owner), kInvalidArgument,
                 "Init: {} '{}' is not for a tensor in the hosted list",
                 is_value ? "value" : "optimizer state", piece.name());
        CheckTensorSize("Init", piece, options_.max_tensor_bytes);
      }
      (is_value ? values : state).Add(piece);
    }
    for (auto& [name, received] : values.Finish()) {
      AD_CHECK(!received.is_sparse(), kInvalidArgument, "Init: value '{}' must be dense", name);
      request.values.emplace(name, std::move(received.dense));
    }
    for (auto& [name, received] : state.Finish()) {
      AD_CHECK(!received.is_sparse(), kInvalidArgument, "Init: optimizer state '{}' must be dense",
               name);
      request.optimizer_state.emplace(name, std::move(received.dense));
    }
    const auto count = static_cast<int64_t>(request.tensors.size());
    store_.Init(std::move(request));
    reply->set_variables(count);
    reply->set_bytes(values.bytes_received() + state.bytes_received());
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::Step(
    grpc::ServerContext* context, grpc::ServerReaderWriter<StepReply, StepMessage>* stream) {
  return rpc::Serve([&] {
    const auto deadline = PsStore::Clock::now() + options_.wait_deadline;
    StepMessage message;
    AD_CHECK(stream->Read(&message) && message.has_header(), kInvalidArgument,
             "Step: the first message must be the header");
    PsStepCall call(store_, message.header(), options_.max_tensor_bytes, deadline,
                    [context] { return context->IsCancelled(); });
    while (stream->Read(&message)) {
      AD_CHECK(message.has_gradient(), kInvalidArgument,
               "{}: only gradient pieces may follow the header", call.who());
      call.AddGradient(message.gradient());
    }
    CountPushed(call.Push());
    const ReplyWriter write = [stream](const StepReply& reply) { return stream->Write(reply); };
    call.AwaitVersions([&](const std::string& name, const PsSnapshot& snapshot) {
      SendValue(write, name, snapshot, call.pull(), call.who());
    });
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::Pull(grpc::ServerContext* context,
                                          const autodist::proto::PullRequest* request,
                                          grpc::ServerWriter<StepReply>* writer) {
  return rpc::Serve([&] {
    const std::string who = fmt::format("worker {} Pull", request->worker());
    store_.WaitInitialized(PsStore::Clock::now() + options_.wait_deadline,
                           [context] { return context->IsCancelled(); });
    const PsPullSnapshot snapshot =
        store_.Snapshot(std::vector<std::string>(request->names().begin(), request->names().end()),
                        request->optimizer_state());
    const ReplyWriter write = [writer](const StepReply& reply) { return writer->Write(reply); };
    for (const auto& [name, value] : snapshot.tensors) SendValue(write, name, value, true, who);
    for (const auto& [key, slot] : snapshot.optimizer_state) SendPieces(write, key, slot, who);
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::Save(grpc::ServerContext* context,
                                          const autodist::proto::SaveRequest* request,
                                          autodist::proto::SaveReply* reply) {
  return rpc::Serve([&] {
    store_.WaitInitialized(PsStore::Clock::now() + options_.wait_deadline,
                           [context] { return context->IsCancelled(); });
    const PsPullSnapshot snapshot = store_.Snapshot({}, /*optimizer_state=*/true);
    checkpoint::CheckpointContents contents;
    const auto describe = [](const std::string& name, const tensor::Tensor& value,
                             autodist::proto::SavedTensor* saved) {
      saved->set_name(name);
      for (const int64_t dim : value.shape()) saved->add_dims(dim);
      saved->set_data_type(static_cast<int32_t>(value.dtype()));
    };
    for (const auto& [name, value] : snapshot.tensors) {
      contents.variables.emplace_back(name, *value.value);
      describe(name, *value.value, reply->add_values());
    }
    for (const auto& [key, slot] : snapshot.optimizer_state) {
      contents.optimizer.emplace_back(key, slot);
      describe(key, slot, reply->add_optimizer_state());
    }
    reply->set_bytes(
        static_cast<int64_t>(checkpoint::WriteCheckpointFile(request->path(), contents)));
    return grpc::Status::OK;
  });
}

grpc::Status ParameterServerService::Stats(grpc::ServerContext* /*context*/,
                                           const autodist::proto::StatsRequest* /*request*/,
                                           autodist::proto::StatsReply* reply) {
  return rpc::Serve([&] {
    const PsStats stats = CurrentStats();
    reply->set_bytes_pushed(stats.bytes_pushed);
    reply->set_bytes_pushed_decoded(stats.bytes_pushed_decoded);
    reply->set_bytes_pulled(stats.bytes_pulled);
    reply->set_version(stats.version);
    reply->set_steps(stats.steps);
    reply->set_updates(stats.updates);
    reply->set_pushes(stats.pushes);
    return grpc::Status::OK;
  });
}

void ParameterServerService::SendValue(const ReplyWriter& write, const std::string& name,
                                       const PsSnapshot& snapshot, bool with_values,
                                       const std::string& who) {
  StepReply reply;
  reply.mutable_version()->set_name(name);
  reply.mutable_version()->set_version(snapshot.version);
  reply.mutable_version()->set_incarnation(store_.incarnation());
  AD_CHECK(write(reply), kUnavailable, "{}: the reply stream closed", who);
  if (!with_values) return;
  if (!snapshot.changed) {
    SendPieces(write, name, *snapshot.value, who);
    return;
  }
  StepReply piece;
  rpc::EmitSparse(name, *snapshot.changed, 0, options_.piece_bytes, ReplySink(write, piece, who));
  CountPulled(snapshot.ReplyBytes());
}

void ParameterServerService::SendPieces(const ReplyWriter& write, const std::string& name,
                                        const tensor::Tensor& value, const std::string& who) {
  StepReply reply;
  rpc::EmitTensor(name, value, 0, options_.piece_bytes, ReplySink(write, reply, who));
  CountPulled(static_cast<int64_t>(value.nbytes()));
}

grpc::Status ParameterServerService::DataChannel(
    grpc::ServerContext* /*context*/, const autodist::proto::DataChannelRequest* /*request*/,
    autodist::proto::DataChannelReply* reply) {
  const std::lock_guard lock(data_channel_mutex_);
  reply->set_port(data_channel_ != nullptr ? data_channel_->port() : 0);
  return grpc::Status::OK;
}

int ParameterServerService::ServeDataChannel(
    const std::string& host, const std::shared_ptr<const security::JobCredentials>& credentials) {
  const std::lock_guard lock(data_channel_mutex_);
  AD_CHECK(data_channel_ == nullptr, kFailedPrecondition,
           "the parameter server's data channel is served already (port {})",
           data_channel_->port());
  data_channel_ = std::make_unique<PsDataChannelServer>(*this, host, credentials);
  return data_channel_->port();
}

void ParameterServerService::Shutdown() {
  store_.Shutdown();
  const std::lock_guard lock(data_channel_mutex_);
  if (data_channel_ != nullptr) data_channel_->Stop();
}

ParameterServerService::~ParameterServerService() {
  // Its connection threads call into this service: stop them before any member goes.
  Shutdown();
}

void ParameterServerService::CountPushed(const PushedBytes& bytes) {
  bytes_pushed_.fetch_add(bytes.wire);
  bytes_pushed_decoded_.fetch_add(bytes.decoded);
  observe::ProcessMetrics().parameter_server_received_bytes.Inc(static_cast<double>(bytes.wire));
}

void ParameterServerService::CountPulled(int64_t bytes) {
  bytes_pulled_.fetch_add(bytes);
  observe::ProcessMetrics().parameter_server_sent_bytes.Inc(static_cast<double>(bytes));
}

PsStats ParameterServerService::CurrentStats() const {
  PsStats stats = store_.Stats();
  stats.bytes_pushed = bytes_pushed_.load();
  stats.bytes_pushed_decoded = bytes_pushed_decoded_.load();
  stats.bytes_pulled = bytes_pulled_.load();
  return stats;
}

}  // namespace autodist::ps
