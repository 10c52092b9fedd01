#include "runtime/coordinator/rendezvous_store.h"

#include <utility>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::coordinator {
namespace {

class CoordinatorRendezvous final : public collective::RendezvousStore {
 public:
  CoordinatorRendezvous(std::shared_ptr<CoordinatorClient> client, std::string node)
      : client_(std::move(client)), node_(std::move(node)) {}

  void Set(const std::string& key, const std::string& value) override {
    client_->StoreSet(node_, key, value);
  }

  std::vector<std::string> Get(const std::vector<std::string>& keys,
                               std::chrono::milliseconds wait) override {
    return client_->StoreGet(node_, keys, wait);
  }

 private:
  std::shared_ptr<CoordinatorClient> client_;
  std::string node_;
};

}  // namespace

std::shared_ptr<collective::RendezvousStore> MakeCoordinatorRendezvous(
    std::shared_ptr<CoordinatorClient> client, std::string node) {
  AD_CHECK(client != nullptr, kInvalidArgument, "coordinator rendezvous for '{}': no client", node);
  return std::make_shared<CoordinatorRendezvous>(std::move(client), std::move(node));
}

}  // namespace autodist::coordinator
