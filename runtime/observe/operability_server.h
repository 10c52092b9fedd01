// The operator's HTTP endpoints for Prometheus and the kubelet: /metrics (the registry's text
// exposition), /healthz (liveness: every health check passes) and /readyz (readiness: every
// ready check passes, e.g. the informers' caches synced). Checks answer in the style of the API
// server's own /healthz: "[+]name ok" / "[-]name failed: reason" lines, 200 or 500.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/observe/metrics.h"

namespace autodist::observe {

struct OperabilityOptions {
  std::string address = "0.0.0.0";
  int port = 8080;  // 0 picks a free port (tests)
};

// ":8080" → {"0.0.0.0", 8080}; "127.0.0.1:9090" → {"127.0.0.1", 9090}: the chart's
// --metrics-bind-address. Throws autodist::Error (kInvalidArgument) naming the flag value.
OperabilityOptions ParseBindAddress(const std::string& bind_address);

// A check passes by returning true; false or an exception (its message is shown) fails it.
using Check = std::function<bool()>;

class OperabilityServer {
 public:
  OperabilityServer(OperabilityOptions options, const Registry& registry);
  ~OperabilityServer();  // stops
  OperabilityServer(const OperabilityServer&) = delete;
  OperabilityServer& operator=(const OperabilityServer&) = delete;

  void AddHealthCheck(std::string name, Check check);
  void AddReadyCheck(std::string name, Check check);

  // Binds and serves; throws autodist::Error (kUnavailable) when the address cannot be bound.
  void Start();
  void Stop();

  int port() const { return port_; }
  std::string url() const;  // "http://ADDRESS:PORT"

 private:
  struct Impl;
  // Runs `checks`; returns the HTTP status and the report.
  std::pair<int, std::string> RunChecks(const std::string& endpoint,
                                        const std::vector<std::pair<std::string, Check>>& checks);

  OperabilityOptions options_;
  const Registry& registry_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, Check>> health_;
  std::vector<std::pair<std::string, Check>> ready_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace autodist::observe
