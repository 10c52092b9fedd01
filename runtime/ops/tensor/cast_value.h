// Cast's conversions, written once for the CPU and CUDA kernels: C++/PyTorch semantics, float to
// integer truncating toward zero (to int8/uint8 through int64, wrapping as PyTorch does),
// anything to bool "!= 0". A float outside the target integer's range (and NaN) has no defined
// result: the CPU and the GPU may give different integers there.
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/common/host_device.h"

namespace autodist::ops {

template <typename To, typename From>
AUTODIST_HOST_DEVICE To CastValue(From value) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                !std::is_same_v<To, bool> && sizeof(To) < 4) {
    // A negative float to uint8 is undefined in C++; PyTorch goes through int64 and wraps.
    return static_cast<To>(static_cast<int64_t>(value));
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace autodist::ops
