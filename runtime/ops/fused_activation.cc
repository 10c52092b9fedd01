#include "runtime/ops/fused_activation.h"

#include "runtime/common/error.h"
#include "runtime/ops/math/unary_math.h"
#include "runtime/ops/parallel.h"

namespace autodist::ops {

const char* FusedActivationName(FusedActivation activation) {
  switch (activation) {
    case FusedActivation::kRelu:
      return "Relu";
    case FusedActivation::kNone:
      break;
  }
  return "none";
}

void ApplyFusedActivation(FusedActivation activation, float* data, int64_t n) {
  switch (activation) {
    case FusedActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) data[i] = ReluOp::Forward(data[i]);
      return;
    case FusedActivation::kNone:
      return;
  }
}

tensor::Tensor FusedActivationGrad(FusedActivation activation, const tensor::Tensor& dy,
                                   const tensor::Tensor& y) {
  AD_CHECK(activation == FusedActivation::kRelu, kInternal,
           "the gradient of fused activation {} was asked for", FusedActivationName(activation));
  tensor::Tensor dx(tensor::DType::kFloat32, y.shape());
  const auto* g = dy.data<float>();
  const auto* out = y.data<float>();
  auto* d = dx.data<float>();
  // The Relu kernel's grain (activation/relu.cc); the split does not change the bits.
  ParallelFor(y.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) d[i] = ReluOp::Grad(g[i], out[i]);
  });
  return dx;
}

}  // namespace autodist::ops
