#include "runtime/comm/coordinator_gloo_store.h"

#include <gloo/rendezvous/store.h>

#include <utility>
#include <vector>

#include "runtime/comm/coordinator_client.h"
#include "runtime/common/error.h"

namespace autodist::comm {
namespace {

class CoordinatorGlooStore final : public gloo::rendezvous::Store {
 public:
  CoordinatorGlooStore(std::shared_ptr<CoordinatorClient> client, std::string node,
                       std::chrono::milliseconds get_wait)
      : client_(std::move(client)), node_(std::move(node)), get_wait_(get_wait) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    client_->StoreSet(node_, key, std::string(data.begin(), data.end()));
  }

  std::vector<char> get(const std::string& key) override {
    const std::string value = client_->StoreGet(node_, {key}, get_wait_).at(0);
    return {value.begin(), value.end()};
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, gloo::rendezvous::Store::kDefaultTimeout);
  }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    if (keys.empty()) return;
    // Gloo waits for few and small keys (one address list per rank), so fetching their values
    // along is cheaper than a call of its own.
    client_->StoreGet(node_, keys, timeout);
  }

 private:
  std::shared_ptr<CoordinatorClient> client_;
  std::string node_;
  std::chrono::milliseconds get_wait_;
};

}  // namespace

std::shared_ptr<gloo::rendezvous::Store> MakeCoordinatorGlooStore(
    std::shared_ptr<CoordinatorClient> client, std::string node,
    std::chrono::milliseconds get_wait) {
  AD_CHECK(client != nullptr, kInvalidArgument, "coordinator gloo store for '{}': no client", node);
  return std::make_shared<CoordinatorGlooStore>(std::move(client), std::move(node), get_wait);
}

}  // namespace autodist::comm
