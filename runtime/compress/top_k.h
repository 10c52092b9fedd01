// Top-k selection by magnitude, shared by everything that sends only a gradient's largest
// entries: the TopK all-reduce compressor (runtime/compress) and TopK-compressed
// parameter-server pushes (runtime/comm). Both sides of a job must agree on k and on which
// entries win, so the count and the order are defined here once.
#pragma once

#include <cstdint>
#include <vector>

namespace autodist::compress {

// k = ceil(fraction * elements), clamped to [0, elements]. A relative tolerance of 1e-12 keeps a
// product that is an integer in exact arithmetic from rounding up past it (0.1 * 320 gives 32).
int64_t TopKCount(double fraction, int64_t elements);

// Sets `indices` to the positions of the k entries of values[0, count) largest in magnitude, in
// ascending order. Ties go to the lower index, and NaN counts as the largest magnitude, so that a
// broken gradient is sent (and reported by its receiver) rather than breaking the ordering; the
// choice is therefore the same on every machine. `indices` is also the scratch space (count
// entries), so a caller that keeps it across calls allocates once. Requires 0 <= k <= count.
void SelectLargest(const float* values, int64_t count, int64_t k, std::vector<int64_t>& indices);

}  // namespace autodist::compress
