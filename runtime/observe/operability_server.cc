#include "runtime/observe/operability_server.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/common/error.h"

namespace autodist::observe {
namespace {

using web::http::http_request;
using web::http::experimental::listener::http_listener;

// Asks the kernel for a free port; the listener binds it right after (cpprestsdk does not say
// which port it bound, so port 0 cannot be passed through).
int FreePort(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  AD_CHECK(fd >= 0, kUnavailable, "operability server: cannot create a socket: {}",
           std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  const bool parsed = ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) == 1;
  const bool bound = parsed && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  socklen_t len = sizeof(addr);
  const bool named = bound && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  AD_CHECK(named, kUnavailable, "operability server: cannot bind {} to pick a port: {}", address,
           parsed ? std::strerror(errno) : "not an IPv4 address");
  return ntohs(addr.sin_port);
}

}  // namespace

OperabilityOptions ParseBindAddress(const std::string& bind_address) {
  const auto colon = bind_address.rfind(':');
  AD_CHECK(colon != std::string::npos, kInvalidArgument,
           "metrics bind address '{}': expected [HOST]:PORT, e.g. ':8080'", bind_address);
  OperabilityOptions options;
  const std::string host = bind_address.substr(0, colon);
  options.address = host.empty() ? "0.0.0.0" : host;
  const std::string port = bind_address.substr(colon + 1);
  char* end = nullptr;
  const long value = std::strtol(port.c_str(), &end, 10);
  AD_CHECK(!port.empty() && *end == '\0' && value >= 0 && value <= 65535, kInvalidArgument,
           "metrics bind address '{}': port '{}' is not a number in 0-65535", bind_address, port);
  options.port = static_cast<int>(value);
  return options;
}

struct OperabilityServer::Impl {
  std::unique_ptr<http_listener> listener;
};

OperabilityServer::OperabilityServer(OperabilityOptions options, const Registry& registry)
    : options_(std::move(options)), registry_(registry), impl_(std::make_unique<Impl>()) {}

OperabilityServer::~OperabilityServer() { Stop(); }

void OperabilityServer::AddHealthCheck(std::string name, Check check) {
  std::lock_guard lock(mutex_);
  health_.emplace_back(std::move(name), std::move(check));
}

void OperabilityServer::AddReadyCheck(std::string name, Check check) {
  std::lock_guard lock(mutex_);
  ready_.emplace_back(std::move(name), std::move(check));
}

std::pair<int, std::string> OperabilityServer::RunChecks(
    const std::string& endpoint, const std::vector<std::pair<std::string, Check>>& checks) {
  std::string report;
  bool ok = true;
  for (const auto& [name, check] : checks) {
    std::string reason;
    bool passed = false;
    try {
      passed = check();
    } catch (const std::exception& e) {
      reason = e.what();
    }
    ok = ok && passed;
    report += passed ? "[+]" + name + " ok\n"
                     : "[-]" + name + " failed" + (reason.empty() ? "" : ": " + reason) + "\n";
  }
  report += endpoint + (ok ? " check passed\n" : " check failed\n");
  return {ok ? 200 : 500, report};
}

void OperabilityServer::Start() {
  const auto handler = [this](http_request request) {
    const std::string path = request.relative_uri().path();
    if (request.method() != web::http::methods::GET) {
      request.reply(web::http::status_codes::MethodNotAllowed, "only GET is served\n");
      return;
    }
    if (path == "/metrics") {
      request.reply(web::http::status_codes::OK, registry_.Expose(), kExpositionContentType);
      return;
    }
    if (path == "/healthz" || path == "/readyz") {
      std::vector<std::pair<std::string, Check>> checks;
      {
        std::lock_guard lock(mutex_);
        checks = path == "/healthz" ? health_ : ready_;
      }
      const auto [status, report] = RunChecks(path.substr(1), checks);
      request.reply(static_cast<web::http::status_code>(status), report,
                    "text/plain; charset=utf-8");
      return;
    }
    request.reply(web::http::status_codes::NotFound, "not found: " + path + "\n");
  };
  // A port picked here can be taken by another process before the listener binds it: retry.
  for (int attempt = 0;; ++attempt) {
    port_ = options_.port != 0 ? options_.port : FreePort(options_.address);
    impl_->listener = std::make_unique<http_listener>(url());
    impl_->listener->support(handler);
    try {
      impl_->listener->open().wait();
      return;
    } catch (const std::exception& e) {
      if (options_.port != 0 || attempt >= 5) {
        Fail(ErrorCode::kUnavailable, "operability server: cannot listen on {}: {}", url(),
             e.what());
      }
    }
  }
}

void OperabilityServer::Stop() {
  if (!impl_->listener) return;
  try {
    impl_->listener->close().wait();
  } catch (const std::exception&) {
    // Closing a listener whose connections already failed leaves nothing to act on in teardown.
  }
  impl_->listener.reset();
}

std::string OperabilityServer::url() const {
  return "http://" + options_.address + ":" + std::to_string(port_);
}

}  // namespace autodist::observe
