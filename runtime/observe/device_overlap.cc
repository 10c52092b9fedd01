#include "runtime/observe/device_overlap.h"

#include <algorithm>
#include <set>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::observe {

DeviceOverlap MeasureDeviceOverlap(const std::vector<DeviceReduction>& step) {
  DeviceOverlap overlap;
  if (step.empty()) return overlap;
  int64_t first_ready = step.front().ready_us;
  int64_t last_ready = step.front().ready_us;
  for (const DeviceReduction& reduction : step) {
    AD_CHECK(reduction.end_us >= reduction.start_us, kInvalidArgument,
             "device reduction '{}': ends at {} us, before its start at {} us", reduction.tag,
             reduction.end_us, reduction.start_us);
    AD_CHECK(reduction.start_us >= reduction.ready_us, kInvalidArgument,
             "device reduction '{}': starts at {} us, before its data was ready at {} us (the "
             "communication stream waits for that: these are not one collective's times)",
             reduction.tag, reduction.start_us, reduction.ready_us);
    first_ready = std::min(first_ready, reduction.ready_us);
    last_ready = std::max(last_ready, reduction.ready_us);
  }
  overlap.reductions = static_cast<int>(step.size());
  overlap.backward_window_us = last_ready - first_ready;
  for (const DeviceReduction& reduction : step) {
    if (reduction.start_us >= last_ready) continue;
    ++overlap.overlapped;
    overlap.overlapped_us += std::min(reduction.end_us, last_ready) - reduction.start_us;
  }
  return overlap;
}

std::vector<std::vector<DeviceReduction>> SplitIntoSteps(std::vector<DeviceReduction> reductions) {
  std::stable_sort(
      reductions.begin(), reductions.end(),
      [](const DeviceReduction& a, const DeviceReduction& b) { return a.ready_us < b.ready_us; });
  std::vector<std::vector<DeviceReduction>> steps;
  std::set<std::string> tags;  // the current step's
  for (DeviceReduction& reduction : reductions) {
    if (steps.empty() || tags.contains(reduction.tag)) {
      steps.emplace_back();
      tags.clear();
    }
    tags.insert(reduction.tag);
    steps.back().push_back(std::move(reduction));
  }
  return steps;
}

}  // namespace autodist::observe
