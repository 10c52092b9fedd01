#include "tests/operator/fake_cluster.h"

#include <thread>

#include "tests/k8s/test_util.h"

namespace autodist::kube::testing {
namespace {

k8s::ApiServerOptions FastOptions() {
  k8s::ApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(100);
  return options;
}

}  // namespace

FakeCluster::FakeCluster() : FakeCluster(FastOptions()) {}

FakeCluster::FakeCluster(k8s::ApiServerOptions options)
    : api_(std::make_unique<k8s::ApiServer>(options)),
      http_(std::make_unique<k8s::HttpServer>(*api_, "127.0.0.1", 0)) {}

FakeCluster::~FakeCluster() {
  http_.reset();
  api_.reset();
}

Config FakeCluster::config() const {
  Config config;
  config.server = url();
  config.ns = "default";
  config.source = "test double";
  return config;
}

std::unique_ptr<Client> FakeCluster::NewClient(ClientOptions options) const {
  return std::make_unique<Client>(config(), std::move(options));
}

void FakeCluster::InjectFailures(const nlohmann::json& rules) {
  api_->faults().Configure({{"failures", rules}});
}

void FakeCluster::CloseWatches() { api_->store().CloseAllWatches(); }

void FakeCluster::CompactHistory() { api_->store().CompactHistory(); }

nlohmann::json FakeCluster::Requests() { return api_->faults().Stats()["requests"]; }

void FakeCluster::RegisterCrd() { k8s::testing::RegisterCrd(*api_); }

bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

nlohmann::json ConfigMap(const std::string& name, const nlohmann::json& labels,
                         const std::string& value) {
  nlohmann::json object = {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", {{"name", name}}},
                           {"data", {{"k", value}}}};
  if (!labels.is_null()) object["metadata"]["labels"] = labels;
  return object;
}

}  // namespace autodist::kube::testing
