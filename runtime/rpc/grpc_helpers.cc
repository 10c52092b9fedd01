#include "runtime/rpc/grpc_helpers.h"

#include <fmt/format.h>
#include <grpc/support/log.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_certificate_verifier.h>
#include <grpcpp/security/tls_credentials_options.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <mutex>
#include <string_view>

#include "runtime/security/certificate_authority.h"
#include "runtime/security/peer_check.h"
#include "runtime/security/tls_context.h"

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

// The server's check of a client: the chain its certificate came with must lead to the job's
// CA (PeerCheck). gRPC's own verification would refuse the same clients, but it logs only
// "certificate verify failed"; this says which certificate and why, and keeps the refusal to one
// line.
class JobClientVerifier : public grpc::experimental::ExternalCertificateVerifier {
 public:
  JobClientVerifier(const std::string& ca, std::string server)
      : check_(ca, "the job's CA certificate"), server_(std::move(server)) {}

  bool Verify(grpc::experimental::TlsCustomVerificationCheckRequest* request,
              std::function<void(grpc::Status)> /*callback*/, grpc::Status* sync_status) override {
    // The leaf alone: a job's CA signs its members' certificates directly (no intermediates),
    // and what else a client sends along (OpenSSL adds the CA it trusts) must not count.
    const grpc::string_ref leaf = request->peer_cert();
    const std::optional<std::string> failure =
        check_.CheckChain(std::string(leaf.data(), leaf.size()));
    if (failure) {
      std::cerr << fmt::format("autodist: RPC server {}: refused a client: {}\n", server_, *failure)
                << std::flush;
      *sync_status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, *failure);
    } else {
      *sync_status = grpc::Status::OK;
    }
    return true;  // decided synchronously
  }

  void Cancel(grpc::experimental::TlsCustomVerificationCheckRequest* /*request*/) override {}

 private:
  security::PeerCheck check_;
  std::string server_;
};

// gRPC's log, with its TLS handshake failures said in our words. A client that fails the job's
// check is refused by JobClientVerifier with its own line; what reaches this is a handshake that
// broke before any certificate was looked at, which on a job's server is almost always a
// plaintext client. Everything else is printed as gRPC would (its verbosity still applies: gRPC
// calls this only for what GRPC_VERBOSITY lets through).
void LogGrpc(gpr_log_func_args* args) {
  const std::string_view message = args->message;
  constexpr std::string_view kHandshakeFailed = "Handshake failed with fatal error ";
  if (message.substr(0, kHandshakeFailed.size()) == kHandshakeFailed) {
    const std::string_view detail = message.substr(kHandshakeFailed.size());
    std::cerr << fmt::format("autodist: RPC: {}: {}\n",
                             security::SpeaksNoTls(detail)
                                 ? "refused a client that does not speak TLS (a plaintext "
                                   "client?)"
                             : detail.find("certificate verify failed") != std::string_view::npos
                                 ? "a TLS handshake failed: the server's certificate is not of "
                                   "this job's CA (another job's server?)"
                                 : "a TLS handshake failed",
                             detail)
              << std::flush;
    return;
  }
  std::cerr << fmt::format("grpc {} {}:{}] {}\n", gpr_log_severity_string(args->severity),
                           args->file, args->line, message)
            << std::flush;
}

void InstallGrpcLog() {
  static std::once_flag once;
  std::call_once(once, [] { gpr_set_log_function(LogGrpc); });
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentials(const RpcOptions& options,
                                                           const std::string& address) {
  if (!options.credentials) return grpc::InsecureServerCredentials();
  InstallGrpcLog();
  const security::JobCredentials& own = *options.credentials;
  auto certificates = std::make_shared<grpc::experimental::StaticDataCertificateProvider>(
      own.ca, std::vector<grpc::experimental::IdentityKeyCertPair>{{own.key, own.certificate}});
  grpc::experimental::TlsServerCredentialsOptions tls(certificates);
  tls.watch_root_certs();
  tls.watch_identity_key_cert_pairs();
  // The verifier decides alone, so that every refusal is explained (JobClientVerifier); a
  // client without a certificate still fails the handshake itself.
  tls.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  tls.set_certificate_verifier(
      grpc::experimental::ExternalCertificateVerifier::Create<JobClientVerifier>(own.ca, address));
  return grpc::experimental::TlsServerCredentials(tls);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(const RpcOptions& options,
                                                             grpc::ChannelArguments& arguments) {
  if (!options.credentials) return grpc::InsecureChannelCredentials();
  InstallGrpcLog();
  const security::JobCredentials& own = *options.credentials;
  // Every member's certificate names kMemberDnsName: members reach each other by addresses
  // (IPs on a laptop, Service names in a cluster), and the job's CA is what proves the server
  // is the job's.
  arguments.SetSslTargetNameOverride(security::kMemberDnsName);
  return grpc::SslCredentials(grpc::SslCredentialsOptions{own.ca, own.key, own.certificate});
}

int ClampToInt(int64_t bytes) {
  return static_cast<int>(std::min<int64_t>(bytes, std::numeric_limits<int>::max()));
}

}  // namespace

RpcOptions WithCredentials(std::shared_ptr<const security::JobCredentials> credentials) {
  RpcOptions options;
  options.credentials = std::move(credentials);
  return options;
}

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
  builder.AddListeningPort(address, ServerCredentials(options, address), &port_);
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
  std::shared_ptr<grpc::ChannelCredentials> credentials = ChannelCredentials(options, arguments);
  return grpc::CreateCustomChannel(endpoint, credentials, arguments);
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
