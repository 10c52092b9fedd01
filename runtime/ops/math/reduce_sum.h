// Summation over axes, shared by ReduceSum/ReduceMean and by the gradients of broadcast
// operands (which sum a gradient back to the operand's shape). Sums accumulate in double per
// output element and round once, and run in parallel with contiguous vectorized inner loops.
#pragma once

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

// out[o] = (sum of the elements of x that reduce into o) / divisor, where `kept_shape` has the
// rank of `shape`, each axis either equal to it (kept) or 1 (summed). `out` holds
// NumElements(kept_shape) values; a sum over no elements is 0.
void SumToKeptShape(const float* x, const tensor::Shape& shape, const tensor::Shape& kept_shape,
                    float* out, float divisor = 1.0F);

// `grad`, the gradient of a broadcast result, summed down to `target`, the shape of an operand
// that was broadcast to grad.shape(). Returns `grad` itself when the shapes are equal, and a
// view of it when they differ only by leading 1s.
tensor::Tensor SumToShape(const tensor::Tensor& grad, const tensor::Shape& target);

}  // namespace autodist::ops
