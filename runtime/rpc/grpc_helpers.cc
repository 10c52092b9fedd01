#include "runtime/rpc/grpc_helpers.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace autodist::rpc {
namespace {

// HTTP/2 flow control for streams of 1 MiB tensor pieces. gRPC's default sizes each stream's
// window from bandwidth-delay-product probes (pings timed against the data); on loopback and in a
// LAN those windows stall and shrink during bulk pushes and let the transport buffer data it
// later faults in, which cost up to half the throughput of a 128 MiB push+pull
// (bench/ps_throughput_bench, docs/performance.md). A fixed 16 MiB window per stream covers a
// 10 Gb/s link with a 10 ms round trip; set on both ends, as each announces its own receive
// window.
constexpr int kStreamWindowBytes = 16 << 20;

template <typename SetInt>
void SetFlowControl(SetInt&& set) {
  set(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  set(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamWindowBytes);
}

int ClampToInt(int64_t bytes) {
  return static_cast<int>(std::min<int64_t>(bytes, std::numeric_limits<int>::max()));
}

}  // namespace

std::string HostOfEndpoint(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  return colon == std::string::npos ? endpoint : endpoint.substr(0, colon);
}

RpcServer::RpcServer(const std::string& address, const std::vector<grpc::Service*>& services,
                     const RpcOptions& options) {
  grpc::ServerBuilder builder;
  // gRPC enables SO_REUSEPORT by default: a second server would then share the port instead of
  // failing, and half of the peers' calls would reach the wrong process.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(ClampToInt(options.max_message_bytes));
  builder.SetMaxSendMessageSize(ClampToInt(options.max_message_bytes));
  SetFlowControl([&](const char* name, int value) { builder.AddChannelArgument(name, value); });
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
  for (grpc::Service* service : services) builder.RegisterService(service);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    server_.reset();
    Fail(ErrorCode::kUnavailable,
         "cannot listen on {}: the address is in use or not local to this machine", address);
  }
  endpoint_ = fmt::format("{}:{}", HostOfEndpoint(address), port_);
}

RpcServer::~RpcServer() { Shutdown(0); }

void RpcServer::Shutdown(int64_t grace_ms) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(grace_ms));
  server_->Wait();
  server_.reset();
}

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& endpoint, const RpcOptions& options) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(ClampToInt(options.max_message_bytes));
  arguments.SetMaxSendMessageSize(ClampToInt(options.max_message_bytes));
  // Each peer gets its own TCP connection: channels to the same endpoint from one process would
  // otherwise share one, serialising the pushes of parallel streams.
  arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Members of a job start together and connect before their peers listen; gRPC's default
  // reconnect back-off (1 s, growing) would then delay every start by a second or more. The
  // "minimum back-off" is gRPC's minimum time given to one connection attempt, not a delay: at
  // 50 ms a handshake on a busy node timed out again and again, so it keeps a few seconds.
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  arguments.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // On a cluster a member's name resolves only once its pod is in the Service's EndpointSlice
  // and DNS caught up: a lookup made earlier fails, and gRPC's DNS resolver would not look again
  // for 30 s (its default), however often a caller retries (the coordinator's Register does,
  // until the rendezvous deadline). A second keeps the retries meaningful.
  arguments.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, 1000);
  SetFlowControl([&](const char* name, int value) { arguments.SetInt(name, value); });
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), arguments);
}

grpc::Status ToStatus(const autodist::Error& error) {
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (error.code()) {
    case ErrorCode::kInvalidArgument:
      code = grpc::StatusCode::INVALID_ARGUMENT;
      break;
    case ErrorCode::kNotFound:
      code = grpc::StatusCode::NOT_FOUND;
      break;
    case ErrorCode::kFailedPrecondition:
      code = grpc::StatusCode::FAILED_PRECONDITION;
      break;
    case ErrorCode::kUnavailable:
      code = grpc::StatusCode::UNAVAILABLE;
      break;
    case ErrorCode::kInternal:
      code = grpc::StatusCode::INTERNAL;
      break;
  }
  return {code, error.what()};
}

void ThrowRpcError(const grpc::Status& status, const std::string& what) {
  ErrorCode code = ErrorCode::kInternal;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      code = ErrorCode::kUnavailable;
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      code = ErrorCode::kInvalidArgument;
      break;
    case grpc::StatusCode::NOT_FOUND:
      code = ErrorCode::kNotFound;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ABORTED:
      code = ErrorCode::kFailedPrecondition;
      break;
    default:
      break;
  }
  Fail(code, "{}: {}", what, status.error_message());
}

}  // namespace autodist::rpc
