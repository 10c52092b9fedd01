#include "runtime/collective/rendezvous.h"

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

}  // namespace autodist::collective
