#include "operator/reconcile/time_format.h"

#include <algorithm>

namespace autodist::reconcile {

std::chrono::seconds SecondsUntil(TimePoint now, TimePoint then) {
  const auto left = std::chrono::ceil<std::chrono::seconds>(then - now);
  return std::max(left, std::chrono::seconds(1));
}

}  // namespace autodist::reconcile
