// The workers' (and the chief's) side of a parameter server: Init, one Step per training step,
// Pull for the first values and for checkpoints, Stats. Tensors travel in pieces both ways
// (tensor_wire.h). Semantics: docs/parameter-servers.md.
//
// Thread-safe: calls may run concurrently, on one PsClient or on several (one per PS and per
// replica stream); each call is its own RPC. A client keeps the error-feedback residuals of the
// compressed pushes made through it (runtime/compress/push_encoder.h), so a worker keeps one client
// per server for the whole run.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "proto/ps_service.grpc.pb.h"
#include "runtime/compress/push_encoder.h"
#include "runtime/ps/data_channel_client.h"
#include "runtime/ps/types.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/rpc/tensor_wire.h"

namespace autodist::ps {

// Longer than a server's own wait deadline (300 s by default): see PsClient.
inline constexpr std::chrono::milliseconds kDefaultCallDeadline = std::chrono::minutes(10);

class PsClient {
 public:
  // `name` ("ps-0") and `endpoint` ("10.0.0.3:7001") name the server in errors. `call_deadline`
  // bounds every call; it is longer than the server's own wait deadline (300 s by default), so
  // that a Step waiting for a dead peer fails with the server's message naming the replicas
  // that are missing rather than with a bare DEADLINE_EXCEEDED.
  // Replies (pulled values) are received into `reply_staging`'s host staging memory: pinned where
  // the values go on to GPUs (rpc::PieceAssembler).
  PsClient(std::string name, std::string endpoint, const rpc::RpcOptions& options = {},
           std::chrono::milliseconds call_deadline = kDefaultCallDeadline,
           tensor::DeviceKind reply_staging = tensor::DeviceKind::kCpu);

  // Sends the hosted tensors, optimizer, initial values and optimizer state. Throws
  // autodist::Error naming "parameter server <name> (<endpoint>): Init" on any failure
  // (FailedPrecondition when the server is initialized already).
  void Init(const PsInitRequest& request);

  // Pushes the gradients of one step and waits for the reply: the versions of the tensors
  // pushed to and, with `pull`, their values. Travels on the server's data channel
  // (ps_data_channel.h) when it has one, else as a gRPC stream; the result is the same. Dense
  // gradients are compressed as their GradientRef asks, with error feedback per
  // (request.first_replica, tensor name). Throws InvalidArgument for a gradient that sets neither
  // or both of dense and sparse or that cannot be compressed as asked (CheckGradientRef), and the
  // server's error otherwise.
  PsValues Step(const PsStepRequest& request);

  // Values and versions of `names` (every hosted tensor when empty), one consistent snapshot;
  // with `optimizer_state` also their optimizer slots, in `values` as "<tensor>/<slot>".
  // `worker` only names the caller in the server's messages.
  PsValues Pull(const std::vector<std::string>& names, bool optimizer_state, int worker = 0);

  PsStats Stats();

  // Has the server write its hosted tensors and optimizer slots to the checkpoint file `path`
  // (one consistent snapshot); returns what it wrote. Throws the server's error (an unwritable
  // path is InvalidArgument naming it).
  autodist::proto::SaveReply Save(const std::string& path, int worker = 0);

  // The error-feedback residual of the pushes of `tensor` by the stream starting at
  // `first_replica`; nullopt before its first error-feedback push. For tests and diagnostics.
  std::optional<std::vector<float>> PushResidual(int first_replica,
                                                 const std::string& tensor) const {
    return encoder_.Residual(first_replica, tensor);
  }

  // Whether Steps travel on the server's data channel; asks the server on first use.
  bool UsesDataChannel() { return Channel() != nullptr; }

  const std::string& name() const { return name_; }
  const std::string& endpoint() const { return endpoint_; }

 private:
  // "parameter server ps-0 (127.0.0.1:7001): Step".
  std::string What(const char* call) const;
  void Prepare(grpc::ClientContext& context) const;
  // The server's data channel: asked for on the first Step; null when the server has none, when
  // it cannot be reached (Steps then stay on gRPC, said once on stderr) or while the server
  // cannot be asked yet (asked again on the next Step).
  PsDataChannelClient* Channel();

  std::string name_;
  std::string endpoint_;
  std::chrono::milliseconds call_deadline_;
  tensor::DeviceKind reply_staging_;
  std::shared_ptr<const security::JobCredentials> credentials_;  // the data channel's too
  std::shared_ptr<grpc::Channel> grpc_channel_;
  std::unique_ptr<autodist::proto::ParameterServer::Stub> stub_;
  // The server was reached once (the channel was READY): from then on a call to a server that is
  // gone fails at once rather than waiting out its deadline.
  mutable std::atomic<bool> reached_{false};
  compress::PushEncoder encoder_;
  std::mutex channel_mutex_;  // guards the two below
  bool channel_known_ = false;
  std::unique_ptr<PsDataChannelClient> channel_;
};

}  // namespace autodist::ps
