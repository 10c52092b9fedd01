// What the GPU tests share: skipping, visibly, where this machine has no GPU (ctest reports such
// a test as Skipped, tests/CMakeLists.txt), and comparing floats by their bits.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "gpu/device/devices.h"

// Skips the test unless a GPU is present; GTEST_SKIP returns from the test body.
#define AUTODIST_SKIP_WITHOUT_GPU()                                                           \
  do {                                                                                        \
    const ::autodist::gpu::GpuInventory autodist_inventory = ::autodist::gpu::DiscoverGpus(); \
    if (autodist_inventory.gpus.empty()) {                                                    \
      GTEST_SKIP() << "needs a GPU: " << autodist_inventory.why_none;                         \
    }                                                                                         \
  } while (false)

namespace autodist::gpu::testing {

// How many representable floats lie between a and b (0: the same bits; NaNs equal NaNs).
inline int64_t UlpDistance(float a, float b) {
  if (a != a && b != b) return 0;  // NOLINT(misc-redundant-expression): NaN tests
  int32_t ia = 0;
  int32_t ib = 0;
  std::memcpy(&ia, &a, sizeof a);
  std::memcpy(&ib, &b, sizeof b);
  // Map the sign-magnitude bits onto a line where adjacent floats are adjacent integers.
  const int64_t la = ia < 0 ? int64_t{INT32_MIN} - ia : ia;
  const int64_t lb = ib < 0 ? int64_t{INT32_MIN} - ib : ib;
  return std::llabs(la - lb);
}

}  // namespace autodist::gpu::testing
