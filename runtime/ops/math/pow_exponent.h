// Pow's exponent as the kernels use it, shared by the CPU and CUDA kernels: float32 as it is,
// an integer tensor converted to float32 (on its own device, through a host copy).
#pragma once

#include <string>

#include "runtime/tensor/tensor.h"

namespace autodist::ops {

// Throws InvalidArgument naming `node` unless the exponent is float32, int32 or int64.
tensor::Tensor PowExponentAsFloat(const tensor::Tensor& exponent, const std::string& node);

}  // namespace autodist::ops
