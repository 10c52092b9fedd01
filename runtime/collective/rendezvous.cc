#include "runtime/collective/rendezvous.h"

#include <fmt/format.h>

#include <optional>

#include "runtime/common/base64.h"
#include "runtime/common/error.h"

namespace autodist::collective {

std::string ShareFromRankZero(RendezvousStore& store, const std::string& key, int rank,
                              const std::function<std::string()>& make,
                              std::chrono::milliseconds wait) {
  if (rank == 0) store.Set(key, EncodeBase64(make()));
  const std::string encoded = store.Get({key}, wait).at(0);
  std::optional<std::string> token = DecodeBase64(encoded);
  AD_CHECK(token.has_value(), kInvalidArgument,
           "rendezvous key '{}' holds no base64 token ({} characters); another job or backend "
           "may use the same prefix",
           key, encoded.size());
  return *token;
}

std::vector<std::string> GatherFromEveryRank(RendezvousStore& store, const std::string& prefix,
                                             int first_rank, const std::vector<std::string>& values,
                                             int size, std::chrono::milliseconds wait) {
  for (size_t i = 0; i < values.size(); ++i) {
    store.Set(fmt::format("{}/{}", prefix, first_rank + static_cast<int>(i)), values[i]);
  }
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank) keys.push_back(fmt::format("{}/{}", prefix, rank));
  return store.Get(keys, wait);
}

}  // namespace autodist::collective
