// The median of a sample: what the profilers keep of repeated timings, as robust to one slow
// outlier (a preempted thread on a shared machine) as a timing can be.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace autodist {

// The middle value, or the mean of the two middle values of an even count; 0 for none.
inline double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace autodist
