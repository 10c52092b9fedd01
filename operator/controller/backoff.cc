#include "operator/controller/backoff.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace autodist::controller {

std::chrono::milliseconds BackoffPolicy::Delay(int failures) const {
  const double base = static_cast<double>(initial.count()) *
                      std::pow(factor, static_cast<double>(std::max(failures, 0)));
  double delay = std::min(base, static_cast<double>(max.count()));
  if (jitter > 0) {
    thread_local std::mt19937 rng{std::random_device{}()};
    delay += delay * std::uniform_real_distribution<double>(0, jitter)(rng);
  }
  return std::chrono::milliseconds(static_cast<long long>(delay));
}

}  // namespace autodist::controller
