// The device's collectives on a timeline (timeline.h): how a GPU communicator writes its CUDA
// event times there (gpu/collective/collective_times.h) and how tests and reports read them
// back, in one place.
//
// * Track "cuda:<gpu> stream comm": a span per collective, "nccl <collective> <tag>" ("nccl
//   all-reduce group-3"), category "device", from its start to its end on the communication
//   stream; its args hold "gpu" and, when the caller marked the data ready, "ready_us".
// * Track "cuda:<gpu> stream tensor": an instant "<tag> ready" at that ready time, where the
//   compute stream had finished the work queued before the mark.
//
// Times are the timeline's (microseconds since the epoch), converted from the device's clock by
// the communicator.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/observe/device_overlap.h"
#include "runtime/observe/timeline.h"

namespace autodist::observe {

inline constexpr std::string_view kDeviceCategory = "device";

struct DeviceCollectiveTimes {
  int gpu = 0;
  std::string_view collective;  // "all-reduce"
  std::string_view tag;         // "group-3"
  std::optional<int64_t> ready_us;
  int64_t start_us = 0;
  int64_t end_us = 0;
};

void WriteDeviceCollective(Timeline& timeline, const DeviceCollectiveTimes& times);

// The all-reduces with a ready time in the trace at `path` (a member's timeline or a merged
// trace), by process ("pid"), in the file's order. Throws InvalidArgument naming the file when
// it is not a trace.
std::map<int, std::vector<DeviceReduction>> ReadDeviceReductions(const std::string& path);

}  // namespace autodist::observe
