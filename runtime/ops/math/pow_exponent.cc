#include "runtime/ops/math/pow_exponent.h"

#include "runtime/common/error.h"

namespace autodist::ops {

tensor::Tensor PowExponentAsFloat(const tensor::Tensor& exponent, const std::string& node) {
  using tensor::DType;
  if (exponent.dtype() == DType::kFloat32) return exponent;
  AD_CHECK(exponent.dtype() == DType::kInt64 || exponent.dtype() == DType::kInt32, kInvalidArgument,
           "{}: exponent must be float32, int32 or int64, got {}", node,
           tensor::DTypeName(exponent.dtype()));
  const tensor::Tensor host = exponent.To(tensor::Device::Cpu());
  tensor::Tensor out(DType::kFloat32, exponent.shape());
  auto* data = out.data<float>();
  for (int64_t i = 0; i < host.numel(); ++i) data[i] = static_cast<float>(host.GetAsDouble(i));
  return out.To(exponent.device());
}

}  // namespace autodist::ops
