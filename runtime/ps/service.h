// The parameter server's gRPC handlers (proto/ps_service.proto). They move tensors between the
// wire and the store (ps_store.h), which holds the state and the semantics; see
// docs/parameter-servers.md for the protocol.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "proto/ps_service.grpc.pb.h"
#include "runtime/ps/store.h"
#include "runtime/ps/types.h"
#include "runtime/rpc/tensor_wire.h"
#include "runtime/security/process_credentials.h"

namespace autodist::ps {

struct ParameterServerOptions {
  // How long a call may wait: for Init (a worker that races the chief's Init), and a Step for
  // the other workers' contributions its reply depends on (a dead peer). Counted from the start
  // of the call; past it the call fails (FAILED_PRECONDITION before Init, UNAVAILABLE naming
  // the replicas still missing otherwise).
  std::chrono::milliseconds wait_deadline{300000};
  // Largest single tensor (value, gradient or optimizer slot) accepted, checked on its first
  // piece before anything is allocated.
  int64_t max_tensor_bytes = int64_t{4} << 30;
  // Size of the value pieces sent back.
  int64_t piece_bytes = rpc::kDefaultPieceBytes;
};

class PsDataChannelServer;

class ParameterServerService final : public autodist::proto::ParameterServer::Service {
 public:
  explicit ParameterServerService(ParameterServerOptions options = {});
  ~ParameterServerService() override;
  ParameterServerService(const ParameterServerService&) = delete;
  ParameterServerService& operator=(const ParameterServerService&) = delete;

  grpc::Status Init(grpc::ServerContext* context,
                    grpc::ServerReader<autodist::proto::InitMessage>* reader,
                    autodist::proto::InitReply* reply) override;
  grpc::Status Step(grpc::ServerContext* context,
                    grpc::ServerReaderWriter<autodist::proto::StepReply,
                                             autodist::proto::StepMessage>* stream) override;
  grpc::Status Pull(grpc::ServerContext* context, const autodist::proto::PullRequest* request,
                    grpc::ServerWriter<autodist::proto::StepReply>* writer) override;
  grpc::Status Stats(grpc::ServerContext* context, const autodist::proto::StatsRequest* request,
                     autodist::proto::StatsReply* reply) override;
  grpc::Status Save(grpc::ServerContext* context, const autodist::proto::SaveRequest* request,
                    autodist::proto::SaveReply* reply) override;
  grpc::Status DataChannel(grpc::ServerContext* context,
                           const autodist::proto::DataChannelRequest* request,
                           autodist::proto::DataChannelReply* reply) override;

  // Starts serving Steps on a data channel (ps_data_channel_server.h) bound to `host` on a port
  // the OS picks, which the DataChannel RPC announces to clients; returns the port. Without it
  // every Step travels over gRPC. With `credentials` (the process's by default) the channel is
  // mutual TLS, as the gRPC server is. Throws Unavailable when the port cannot be bound.
  int ServeDataChannel(const std::string& host,
                       const std::shared_ptr<const security::JobCredentials>& credentials =
                           security::ProcessCredentials());

  // Wakes every waiting call, which then fails with UNAVAILABLE; later waits fail at once; stops
  // the data channel. Call before RpcServer::Shutdown so that blocked Steps do not hold the
  // shutdown up.
  void Shutdown();

  // Bytes, version, steps, updates and pushes so far.
  PsStats CurrentStats() const;

 private:
  // The data channel serves Steps with this service's store, limits and traffic counters.
  friend class PsDataChannelServer;

  void CountPushed(const PushedBytes& bytes);
  void CountPulled(int64_t bytes);

  using ReplyWriter = std::function<bool(const autodist::proto::StepReply&)>;
  // Sends one tensor's reply: its version, then its value in pieces when `with_values`.
  void SendValue(const ReplyWriter& write, const std::string& name, const PsSnapshot& snapshot,
                 bool with_values, const std::string& who);
  // Sends `value` as pieces named `name` and counts its bytes as pulled.
  void SendPieces(const ReplyWriter& write, const std::string& name, const tensor::Tensor& value,
                  const std::string& who);

  ParameterServerOptions options_;
  PsStore store_;
  std::atomic<int64_t> bytes_pushed_{0};
  std::atomic<int64_t> bytes_pushed_decoded_{0};
  std::atomic<int64_t> bytes_pulled_{0};
  std::mutex data_channel_mutex_;
  std::unique_ptr<PsDataChannelServer> data_channel_;  // declared last: goes first
};

}  // namespace autodist::ps
