// Internal, for the .cu files of gpu/ops: where an element of a broadcast's output reads its two
// operands (BroadcastPlan, launch.h).
#pragma once

#include <cstdint>

#include "gpu/ops/launch.h"

namespace autodist::gpu::detail {

// The offsets in a and in b of output element i.
__device__ inline void BroadcastOffsets(const BroadcastPlan& plan, int64_t i, int64_t* a_at,
                                        int64_t* b_at) {
  int64_t rest = i;
  *a_at = 0;
  *b_at = 0;
  for (int axis = plan.rank - 1; axis >= 0; --axis) {
    const int64_t coordinate = rest % plan.dims[axis];
    rest /= plan.dims[axis];
    *a_at += coordinate * plan.a_strides[axis];
    *b_at += coordinate * plan.b_strides[axis];
  }
}

}  // namespace autodist::gpu::detail
