// Dropout's mask as a pure function of one seed and the element index (counter-based: the same
// on any thread count and on any device), written once for the CPU and CUDA kernels.
#pragma once

#include <cstdint>

#include "runtime/common/host_device.h"

namespace autodist::ops {

// SplitMix64's finalizer: a well-mixed 64-bit value of (seed, index).
AUTODIST_HOST_DEVICE inline uint64_t DropoutMix(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Element `index` is kept iff a uniform 24-bit draw is below `threshold` (DropoutDraw's).
AUTODIST_HOST_DEVICE inline bool DropoutKeeps(uint64_t seed, uint64_t index, uint64_t threshold) {
  return (DropoutMix(seed, index) >> 40) < threshold;
}

}  // namespace autodist::ops
