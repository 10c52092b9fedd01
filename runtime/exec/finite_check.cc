#include "runtime/exec/finite_check.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::exec {
namespace {

constexpr const char* kName = "finiteness check";

}  // namespace

void FailDiverged(int64_t step, const std::string& what) {
  Fail(ErrorCode::kFailedPrecondition,
       "step {}: training diverged: {}; lower the learning rate or check the data", step, what);
}

bool GradientFiniteOnHost(const Gradient& gradient) {
  const Tensor t =
      (gradient.is_sparse() ? gradient.sparse->values : gradient.dense).To(tensor::Device::Cpu());
  const auto* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(data[i])) return false;
  }
  return true;
}

DeviceFiniteCheck::DeviceFiniteCheck(const tensor::Device& device)
    : multiply_("Mul", kName, device),
      reduce_("ReduceSum", kName, device, {{"keepdims", 0}}),
      add_("Add", kName, device),
      zero_(Tensor::Scalar(0.0F).To(device)) {}

DeviceFiniteCheck::~DeviceFiniteCheck() = default;

void DeviceFiniteCheck::Add(const Gradient& gradient) {
  const Tensor& values = gradient.is_sparse() ? gradient.sparse->values : gradient.dense;
  if (values.numel() == 0) return;
  // g * 0 is 0 for a finite g and NaN for an infinite or NaN one; their sum cannot overflow.
  const Tensor zeroed = multiply_.Run({&values, &zero_});
  const Tensor poison = reduce_.Run({&zeroed});
  total_ = total_.defined() ? add_.Run({&total_, &poison}) : poison;
}

bool DeviceFiniteCheck::TakeAllFinite() {
  if (!total_.defined()) return true;
  const double total = total_.To(tensor::Device::Cpu()).GetAsDouble(0);
  total_ = Tensor();
  return std::isfinite(total);
}

}  // namespace autodist::exec
