// The API-server test double (tests/k8s) served over HTTP on a free port, with a client config
// pointing at it, for the operator's tests.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "operator/kube/client.h"
#include "tests/k8s/api_server.h"
#include "tests/k8s/http_server.h"

namespace autodist::kube::testing {

class FakeCluster {
 public:
  // Bookmarks every 100 ms so bookmark tests stay fast.
  FakeCluster();
  explicit FakeCluster(k8s::ApiServerOptions options);
  ~FakeCluster();

  k8s::ApiServer& api() { return *api_; }
  std::string url() const { return http_->url(); }
  Config config() const;
  std::unique_ptr<Client> NewClient(ClientOptions options = {}) const;

  // Fault injection (tests/k8s/faults.h): each rule {verb, resource, code, count, ...}.
  void InjectFailures(const nlohmann::json& rules);
  // Ends every open watch, as an API-server restart or a dropped connection would.
  void CloseWatches();
  // Forgets the event history: watches from any older resourceVersion get 410.
  void CompactHistory();
  // Request counts, verb -> resource -> count (e.g. stats["list"]["pods"]).
  nlohmann::json Requests();
  // Registers the AutoDistJob CRD fixture.
  void RegisterCrd();

 private:
  std::unique_ptr<k8s::ApiServer> api_;
  std::unique_ptr<k8s::HttpServer> http_;
};

// Polls `condition` every few milliseconds until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::seconds(5));

nlohmann::json ConfigMap(const std::string& name, const nlohmann::json& labels = nullptr,
                         const std::string& value = "v");

}  // namespace autodist::kube::testing
