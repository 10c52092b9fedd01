#include "runtime/collective/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "runtime/common/error.h"

namespace autodist::collective {
namespace {

// Filled during static initialization, read-only afterwards. A function-local static, so that
// registrations in other files find it constructed whatever the order.
std::map<std::string, CommunicatorFactory>& Factories() {
  static std::map<std::string, CommunicatorFactory> factories;
  return factories;
}

}  // namespace

void RegisterCommunicator(const std::string& name, CommunicatorFactory factory) {
  const bool added = Factories().emplace(name, std::move(factory)).second;
  AD_CHECK(added, kInternal, "communicator backend '{}' is registered twice", name);
}

std::unique_ptr<Communicator> MakeCommunicator(const std::string& name,
                                               const CommunicatorOptions& options) {
  const auto it = Factories().find(name);
  AD_CHECK(it != Factories().end(), kInvalidArgument,
           "no communicator backend '{}' in this build; registered: {}", name,
           fmt::join(RegisteredCommunicators(), ", "));
  AD_CHECK(options.rendezvous != nullptr, kInvalidArgument,
           "communicator '{}' for rank {}: no rendezvous store", name, options.rank);
  return it->second(options);
}

std::vector<std::string> RegisteredCommunicators() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Factories()) names.push_back(name);
  return names;
}

}  // namespace autodist::collective
