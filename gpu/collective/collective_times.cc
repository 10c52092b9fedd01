#include "gpu/collective/collective_times.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <utility>

#include "runtime/observe/device_spans.h"

namespace autodist::gpu {
namespace {

// How long a base event stays the reference: the device's and the host's clocks drift apart by
// parts per million, and float milliseconds lose resolution as the interval grows.
constexpr int64_t kAnchorMicros = 1'000'000;

}  // namespace

void CollectiveTimes::Ready(const std::string& tag, cudaStream_t stream) {
  if (observe::ActiveTimeline() == nullptr) return;
  const std::lock_guard lock(ready_mutex_);
  std::unique_ptr<Event>& event = ready_[tag];
  if (event == nullptr) {
    if (spare_.empty()) {
      event = std::make_unique<Event>(/*timing=*/true);
    } else {
      event = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  // A mark whose collective never ran (a failed step) is simply recorded again.
  event->Record(stream);
}

void CollectiveTimes::Begin(cudaStream_t stream) {
  timeline_ = observe::ActiveTimeline();
  started_ = false;
  if (timeline_ == nullptr) return;
  if (start_ == nullptr) {
    start_ = std::make_unique<Event>(/*timing=*/true);
    end_ = std::make_unique<Event>(/*timing=*/true);
    base_ = std::make_unique<Event>(/*timing=*/true);
  }
  if (anchored_for_ != timeline_ || observe::Timeline::NowMicros() - base_us_ >= kAnchorMicros) {
    Anchor(stream);
  }
}

void CollectiveTimes::Anchor(cudaStream_t stream) {
  // The stream is idle (every call drains it), so the event completes at once: its device time
  // lies between the two host readings, and the midpoint is off by at most half of the wait.
  const int64_t before = observe::Timeline::NowMicros();
  base_->Record(stream);
  base_->Synchronize();
  const int64_t after = observe::Timeline::NowMicros();
  base_us_ = before + (after - before) / 2;
  anchored_for_ = timeline_;
}

cudaError_t CollectiveTimes::Start(cudaStream_t stream) {
  if (timeline_ == nullptr) return cudaSuccess;
  started_ = true;
  return cudaEventRecord(start_->get(), stream);
}

cudaError_t CollectiveTimes::End(cudaStream_t stream) {
  if (!started_) return cudaSuccess;
  return cudaEventRecord(end_->get(), stream);
}

int64_t CollectiveTimes::Micros(const Event& event) const {
  // Negative for a ready mark recorded before the base: elapsed time is signed.
  return base_us_ + std::llround(static_cast<double>(event.ElapsedMsSince(*base_)) * 1000.0);
}

void CollectiveTimes::Finish(std::string_view collective, const std::string& tag) {
  if (timeline_ == nullptr) return;
  observe::Timeline* timeline = std::exchange(timeline_, nullptr);
  std::unique_ptr<Event> ready;
  {
    const std::lock_guard lock(ready_mutex_);
    if (const auto found = ready_.find(tag); found != ready_.end()) {
      ready = std::move(found->second);
      ready_.erase(found);
    }
  }
  // The mark has completed: the communicator's stream waited for the tensor stream's work
  // queued after it, and has drained.
  std::optional<int64_t> ready_us;
  if (started_ && ready != nullptr) ready_us = Micros(*ready);
  if (ready != nullptr) {
    const std::lock_guard lock(ready_mutex_);
    spare_.push_back(std::move(ready));
  }
  if (!started_) return;  // nothing was sent (no elements)
  observe::WriteDeviceCollective(*timeline,
                                 {gpu_, collective, tag, ready_us, Micros(*start_), Micros(*end_)});
}

}  // namespace autodist::gpu
