// gRPC plumbing shared by every service of the runtime: one server per process hosting the
// services it runs (coordinator, parameter server) on one port, channels to peers with the same
// message limits, and the mapping between autodist::Error and grpc::Status in both directions.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/security/process_credentials.h"

namespace autodist::rpc {

struct RpcOptions {
  // Largest single message either side accepts. Tensors travel as pieces (tensor_wire.h), so a
  // message above this is malformed or hostile and is rejected by gRPC (RESOURCE_EXHAUSTED).
  int64_t max_message_bytes = int64_t{64} << 20;
  // The job credentials the server presents and checks its clients against, or a channel
  // presents and checks its server against (mutual TLS, docs/security.md); by default this
  // process's (process_credentials.h). nullptr: plaintext.
  std::shared_ptr<const security::JobCredentials> credentials = security::ProcessCredentials();
};

// Default options with `credentials` (nullptr: plaintext) instead of the process's.
RpcOptions WithCredentials(std::shared_ptr<const security::JobCredentials> credentials);

class RpcServer {
 public:
  // Binds `address` ("127.0.0.1:0" lets the OS pick a free port) and starts serving `services`
  // (not owned; they must outlive the server). With credentials, only clients whose certificate
  // the job's CA issued get through; each refusal is one line on stderr, naming why. Throws
  // kUnavailable naming the address when it cannot be bound, e.g. because the port is in use (port
  // sharing is turned off, so a second server on a port fails instead of silently splitting the
  // traffic).
  RpcServer(const std::string& address, const std::vector<grpc::Service*>& services,
            const RpcOptions& options = {});
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  int port() const { return port_; }
  // host:port as bound ("127.0.0.1:41231").
  const std::string& endpoint() const { return endpoint_; }

  // Stops accepting calls and cancels those in flight after `grace_ms`.
  void Shutdown(int64_t grace_ms = 0);

 private:
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string endpoint_;
};

// "host:port" -> "host"; "[::1]:80" -> "[::1]"; an endpoint without a port is all host.
std::string HostOfEndpoint(const std::string& endpoint);

// A channel to `endpoint` with the same message limits: mutual TLS with options' credentials
// (the server must hold a certificate of the same job), else plaintext.
std::shared_ptr<grpc::Channel> MakeChannel(const std::string& endpoint,
                                           const RpcOptions& options = {});

// The status a handler returns for an error thrown while serving: user errors (bad request
// content) map to INVALID_ARGUMENT / NOT_FOUND, the rest to their natural codes; the message is
// kept.
grpc::Status ToStatus(const autodist::Error& error);

// Throws the autodist::Error for a failed call: `what` names the call and the peer ("parameter
// server ps-0 (127.0.0.1:7001): Step"). UNAVAILABLE / DEADLINE_EXCEEDED become kUnavailable,
// INVALID_ARGUMENT kInvalidArgument, the rest kFailedPrecondition or kInternal.
[[noreturn]] void ThrowRpcError(const grpc::Status& status, const std::string& what);

// Runs a handler body, turning exceptions into a status so that a bad request never takes the
// server down.
template <typename Body>
grpc::Status Serve(Body&& body) {
  try {
    return body();
  } catch (const autodist::Error& error) {
    return ToStatus(error);
  } catch (const std::exception& error) {
    return grpc::Status(grpc::StatusCode::INTERNAL, error.what());
  }
}

}  // namespace autodist::rpc
