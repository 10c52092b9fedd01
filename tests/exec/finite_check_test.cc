// The finiteness check of a step's gradients on a device, run here on the CPU's kernels (the same
// Mul, ReduceSum and Add a GPU's backend registers): finite gradients pass whatever their
// magnitudes (sums that would overflow included), one NaN or infinity anywhere fails the step,
// sparse gradients are checked by their values, and each step starts over.
#include "runtime/exec/finite_check.h"

#include <gtest/gtest.h>

#include <limits>

#include "runtime/tensor/sparse_gradient.h"

namespace autodist::exec {
namespace {

Gradient Dense(std::vector<float> values) {
  Gradient gradient;
  const auto n = static_cast<int64_t>(values.size());
  gradient.dense = Tensor::FromVector<float>({n}, values);
  return gradient;
}

TEST(FiniteCheckTest, OneNonFiniteElementFailsTheStepAndTheNextStepStartsOver) {
  DeviceFiniteCheck check(tensor::Device::Cpu());
  EXPECT_TRUE(check.TakeAllFinite());  // nothing added
  const float huge = std::numeric_limits<float>::max();
  check.Add(Dense({1.0F, -2.0F, 0.0F}));
  check.Add(Dense({huge, huge, huge, -huge}));  // their sum would overflow; each is finite
  EXPECT_TRUE(check.TakeAllFinite());
  for (const float bad :
       {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::quiet_NaN()}) {
    check.Add(Dense({1.0F, 2.0F}));
    check.Add(Dense({3.0F, bad, 4.0F}));
    check.Add(Dense({5.0F}));
    EXPECT_FALSE(check.TakeAllFinite()) << bad;
    EXPECT_TRUE(check.TakeAllFinite()) << "a step after " << bad << " starts over";
  }
  check.Add(Dense({}));  // an empty gradient adds nothing
  EXPECT_TRUE(check.TakeAllFinite());
}

TEST(FiniteCheckTest, SparseGradientsAreCheckedByTheirValues) {
  DeviceFiniteCheck check(tensor::Device::Cpu());
  Gradient gradient;
  gradient.sparse = tensor::SparseGradient{Tensor::FromVector<int64_t>({2}, {1, 4}),
                                           Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}),
                                           {5, 2}};
  check.Add(gradient);
  EXPECT_TRUE(check.TakeAllFinite());
  gradient.sparse->values.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  check.Add(gradient);
  EXPECT_FALSE(check.TakeAllFinite());
  EXPECT_FALSE(GradientFiniteOnHost(gradient));
  EXPECT_TRUE(GradientFiniteOnHost(Dense({1.0F})));
}

}  // namespace
}  // namespace autodist::exec
