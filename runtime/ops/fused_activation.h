// An activation the planner fuses into the op that produces its input (runtime/exec/
// node_fusion.h): Gemm -> Relu runs as one Gemm whose kernel applies Relu to its result,
// so the product is written once and the pre-activation tensor never exists. The kernel's
// backward reads the activation's gradient off its output first, as the Relu kernel does, so a
// fused step gives the unfused pair's bits.
#pragma once

#include <cstdint>

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

enum class FusedActivation : uint8_t { kNone, kRelu };

// "Relu", or "none".
const char* FusedActivationName(FusedActivation activation);

// data[0, n) = activation(data[0, n)) in place, with the activation kernel's own per-element
// math (ReluOp, math/unary_math.h). Single-threaded: callers apply it to the slice their task
// just wrote, while it is in cache.
void ApplyFusedActivation(FusedActivation activation, float* data, int64_t n);

// The gradient of the activation's input from the gradient `dy` of its output `y` (the Relu
// kernel's backward: dy where y > 0), on the host. `activation` must not be kNone.
tensor::Tensor FusedActivationGrad(FusedActivation activation, const tensor::Tensor& dy,
                                   const tensor::Tensor& y);

}  // namespace autodist::ops
