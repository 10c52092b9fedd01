// Exponential back-off, shared by the work queue's per-item retries and the informer's
// reconnects: initial · factor^failures, capped, with optional jitter so that many clients
// failing together do not retry in lockstep.
#pragma once

#include <chrono>

namespace autodist::controller {

struct BackoffPolicy {
  std::chrono::milliseconds initial{5};
  std::chrono::milliseconds max{std::chrono::seconds(1000)};
  double factor = 2.0;
  double jitter = 0.0;  // up to this fraction added at random (0.1 = +0..10%)

  // The delay after `failures` consecutive failures (0 → initial).
  std::chrono::milliseconds Delay(int failures) const;
};

// A failure counter over a policy, for one retrying loop.
class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy) : policy_(policy) {}
  // The delay before the next attempt; each call counts one more failure.
  std::chrono::milliseconds Next() { return policy_.Delay(failures_++); }
  void Reset() { failures_ = 0; }
  int failures() const { return failures_; }

 private:
  BackoffPolicy policy_;
  int failures_ = 0;
};

}  // namespace autodist::controller
