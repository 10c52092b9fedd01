// The device's own times of a communicator's collectives, for the active timeline
// (runtime/observe/device_spans.h says what goes there). Per collective, three CUDA events with
// timing: the caller's "data ready" mark on the tensor stream (Ready, from the thread that wrote
// the data: the communication thread records later, after its earlier groups, so its own
// ordering event says nothing of when backward finished a group), and the start and end of the
// NCCL call on the communicator's stream. Once the call has finished, they become times on the
// timeline's clock through a base event, recorded on the idle communication stream and waited
// for, paired with the host's clock at that moment (taken again every second, so that the two
// clocks' drift and float milliseconds' rounding stay within a microsecond or so).
//
// While no timeline records it costs nothing: Begin leaves the call untimed and Ready returns.
// Events are made on first use and then reused, never one per step: the start, end and base
// events once per communicator, a ready event per tag in flight (a fusion group's), returned
// when its collective has been written.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/device/stream.h"
#include "runtime/observe/timeline.h"

namespace autodist::gpu {

class CollectiveTimes {
 public:
  explicit CollectiveTimes(int gpu) : gpu_(gpu) {}
  CollectiveTimes(const CollectiveTimes&) = delete;
  CollectiveTimes& operator=(const CollectiveTimes&) = delete;

  // From any thread, with GPU `gpu` current: the data of the next collective tagged `tag` is
  // complete once `stream` has run what is queued on it now. Only while a timeline records.
  void Ready(const std::string& tag, cudaStream_t stream);

  // One call's, in order, under the communicator's lock, with its GPU current, on its stream:
  // Begin before anything of the call is queued (the stream idle); Start just before the NCCL
  // call and End once NCCL has put it on the stream, each returning CUDA's status for the
  // communicator to check; Finish once the stream has drained, writing the collective
  // (`collective` "all-reduce", `tag` "group-3").
  void Begin(cudaStream_t stream);
  cudaError_t Start(cudaStream_t stream);
  cudaError_t End(cudaStream_t stream);
  void Finish(std::string_view collective, const std::string& tag);
  // Whether this call is timed and Start has recorded.
  bool started() const { return started_; }

 private:
  // Pairs the base event with the host's clock.
  void Anchor(cudaStream_t stream);
  // `event`'s time on the timeline's clock (microseconds since the epoch).
  int64_t Micros(const Event& event) const;

  const int gpu_;
  observe::Timeline* timeline_ = nullptr;  // the call's; null: untimed
  bool started_ = false;                   // Start recorded this call
  std::unique_ptr<Event> start_;
  std::unique_ptr<Event> end_;
  std::unique_ptr<Event> base_;
  observe::Timeline* anchored_for_ = nullptr;            // the timeline the base was taken for
  int64_t base_us_ = 0;                                  // base_'s time on the host's clock
  std::mutex ready_mutex_;                               // guards ready_ and spare_
  std::map<std::string, std::unique_ptr<Event>> ready_;  // by tag, not yet written
  std::vector<std::unique_ptr<Event>> spare_;
};

}  // namespace autodist::gpu
