// Element-wise sums for Gloo's reductions (internal to the Gloo communicator). Gloo's own
// gloo::sum is a scalar loop and converts float16 one element at a time in software; these run
// at memory speed, so the reduction never limits a loopback all-reduce. float16 is summed in
// float16 (each partial sum rounded to half precision, as Horovod's fp16 compression does).
#pragma once

#include <cstddef>

#include "runtime/collective/communicator.h"

namespace autodist::collective::gloo_detail {

// out[i] = a[i] + b[i] for `count` elements of `type`; `out` may be `a` or `b`.
using SumFunction = void (*)(void* out, const void* a, const void* b, size_t count);

SumFunction SumFor(ElementType type);

}  // namespace autodist::collective::gloo_detail
