#include "runtime/collective/gloo/store_adapter.h"

#include <gloo/rendezvous/store.h>

#include <utility>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::collective {
namespace {

class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(std::shared_ptr<RendezvousStore> store, std::chrono::milliseconds get_wait)
      : store_(std::move(store)), get_wait_(get_wait) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_->Set(key, std::string(data.begin(), data.end()));
  }

  std::vector<char> get(const std::string& key) override {
    const std::string value = store_->Get({key}, get_wait_).at(0);
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
    store_->Get(keys, timeout);
  }

 private:
  std::shared_ptr<RendezvousStore> store_;
  std::chrono::milliseconds get_wait_;
};

}  // namespace

std::shared_ptr<gloo::rendezvous::Store> MakeGlooStore(std::shared_ptr<RendezvousStore> store,
                                                       std::chrono::milliseconds get_wait) {
  AD_CHECK(store != nullptr, kInvalidArgument, "gloo rendezvous: no store");
  return std::make_shared<GlooStoreAdapter>(std::move(store), get_wait);
}

}  // namespace autodist::collective
