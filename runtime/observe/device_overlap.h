// Whether a step's all-reduces ran on the device while its backward pass was still computing
// there, from the device's own clock: the times gpu/collective's communicator records with CUDA
// events and writes to the timeline (device_spans.h), not the host's spans, which show only when
// work was queued.
//
// A group's "ready" time is when the compute stream had finished the work queued before the
// group was handed to communication (its gradients and their packing into the group's buffer):
// the event is recorded by the thread that runs backward, not by the communication thread, so
// it does not wait for earlier groups' reductions. While a later group is not ready yet, the
// compute stream is still producing that step's gradients; a reduction that started on the
// device before the step's last ready time ran while backward was still computing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autodist::observe {

// One group's all-reduce in one step, in microseconds on one clock (the timeline's).
struct DeviceReduction {
  std::string tag;       // "group-3"
  int64_t ready_us = 0;  // the group's data complete on the compute stream
  int64_t start_us = 0;  // the collective's start on the communication stream
  int64_t end_us = 0;    // its end there
};

struct DeviceOverlap {
  int reductions = 0;
  // Reductions that started before the step's last ready time (a later group's gradients were
  // still being computed).
  int overlapped = 0;
  // Microseconds of reduction before the step's last ready time, summed over the reductions.
  int64_t overlapped_us = 0;
  // From the step's first ready time to its last: the part of backward that overlap can hide.
  int64_t backward_window_us = 0;
};

// The overlap of one step's reductions (any order); none for an empty step. Throws
// InvalidArgument naming the reduction when one ends before it starts, or starts before its
// data was ready (the stream waits for that, so such times are not one collective's).
DeviceOverlap MeasureDeviceOverlap(const std::vector<DeviceReduction>& step);

// `reductions` (one worker's, several steps') cut into steps: in order of ready time, a step
// ends where a tag comes again, as every step reduces each group once.
std::vector<std::vector<DeviceReduction>> SplitIntoSteps(std::vector<DeviceReduction> reductions);

}  // namespace autodist::observe
