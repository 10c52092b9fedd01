// The GPU op parity harness (tests/gpu/op_parity_test.cc and the tests of an op's paths, such as
// pool_path_test.cc): a case run on the CPU and on cuda:0, forward and backward with the same
// output gradients, held to a tolerance per case.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "runtime/tensor/tensor.h"
#include "tests/ops/op_test_util.h"

namespace autodist::gpu::parity {

using ops::testing::OpCase;
using ops::testing::OpRunner;
using ops::testing::RandomTensor;
using tensor::Device;
using tensor::Tensor;

struct ParityCase {
  OpCase op;
  float tolerance = 0.0F;  // |cuda - cpu| <= tolerance * max(1, |cpu|)
};

inline std::vector<Tensor> To(const std::vector<Tensor>& tensors, const Device& device) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.defined() ? t.To(device) : Tensor());
  return out;
}

inline void ExpectSame(const Tensor& cpu, const Tensor& cuda, float tolerance,
                       const std::string& what) {
  ASSERT_EQ(cpu.defined(), cuda.defined()) << what;
  if (!cpu.defined()) return;
  ASSERT_EQ(cuda.device(), Device::Cuda(0)) << what;
  const Tensor back = cuda.To(Device::Cpu());
  ASSERT_EQ(cpu.shape(), back.shape()) << what;
  ASSERT_EQ(cpu.dtype(), back.dtype()) << what;
  if (cpu.dtype() == tensor::DType::kBool) {  // masks: exact
    EXPECT_TRUE(std::equal(cpu.data<bool>(), cpu.data<bool>() + cpu.numel(), back.data<bool>()))
        << what;
    return;
  }
  if (cpu.dtype() != tensor::DType::kFloat32) {  // indices: exact
    EXPECT_EQ(cpu.ToInt64Vector(what), back.ToInt64Vector(what)) << what;
    return;
  }
  int reported = 0;
  for (int64_t i = 0; i < cpu.numel() && reported < 5; ++i) {
    const float x = cpu.data<float>()[i];
    const float y = back.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    const float bound = tolerance * std::max(1.0F, std::abs(x));
    if (!(std::abs(x - y) <= bound)) {
      ADD_FAILURE() << what << " element " << i << ": cpu " << x << ", cuda " << y;
      ++reported;
    }
  }
}

// Whether the op takes a gradient for any of the case's inputs (Constant and Shape take none:
// their cases run forward only).
inline bool HasGradients(OpRunner& runner, const OpCase& op) {
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    if (op.inputs[i].defined() && op.inputs[i].dtype() == tensor::DType::kFloat32 &&
        runner.kernel().IsDifferentiable(i)) {
      return true;
    }
  }
  return false;
}

inline std::string Describe(const OpCase& op) {
  std::string out = op.op_type;
  if (op.activation != ops::FusedActivation::kNone) {
    out += std::string("+") + ops::FusedActivationName(op.activation);
  }
  for (const Tensor& t : op.inputs) out += " " + tensor::ShapeToString(t.shape());
  out += " opset " + std::to_string(op.opset) + (op.training ? "" : ", not training");
  return out;
}

// The case on the CPU and on cuda:0, forward and backward with the same output gradients, held
// to its tolerance.
inline void ExpectParity(const ParityCase& c) {
  const std::string what = Describe(c.op);
  OpRunner cpu(c.op);
  OpRunner cuda(c.op, tensor::DeviceKind::kCuda);
  const std::vector<Tensor> outputs = cpu.Forward(c.op.inputs);
  if (!HasGradients(cpu, c.op)) {  // Constant, Shape: nothing to differentiate
    const std::vector<Tensor> actual = cuda.Forward(To(c.op.inputs, Device::Cuda(0)));
    ASSERT_EQ(outputs.size(), actual.size()) << what;
    for (size_t o = 0; o < outputs.size(); ++o) {
      ExpectSame(outputs[o], actual[o], c.tolerance, what + ": output " + std::to_string(o));
    }
    return;
  }
  std::vector<Tensor> grads;
  for (size_t o = 0; o < outputs.size(); ++o) {
    grads.push_back(RandomTensor(outputs[o].shape(), 500 + o, -1.0F, 1.0F));
  }
  const ops::testing::OpResult expected = cpu.ForwardBackward(c.op.inputs, grads);
  const ops::testing::OpResult actual =
      cuda.ForwardBackward(To(c.op.inputs, Device::Cuda(0)), To(grads, Device::Cuda(0)));
  ASSERT_EQ(expected.outputs.size(), actual.outputs.size()) << what;
  for (size_t o = 0; o < expected.outputs.size(); ++o) {
    ExpectSame(expected.outputs[o], actual.outputs[o], c.tolerance,
               what + ": output " + std::to_string(o));
  }
  ASSERT_EQ(expected.input_grads.size(), actual.input_grads.size()) << what;
  // Row-sparse where the CPU's is (Gather on axis 0): the same rows, on the device.
  ASSERT_EQ(expected.sparse.size(), actual.sparse.size()) << what;
  for (size_t i = 0; i < expected.sparse.size(); ++i) {
    ASSERT_EQ(expected.sparse[i] != nullptr, actual.sparse[i] != nullptr)
        << what << ": gradient of input " << i << " sparse on one backend only";
    if (!expected.sparse[i]) continue;
    EXPECT_EQ(actual.sparse[i]->values.device(), Device::Cuda(0)) << what;
    EXPECT_EQ(actual.sparse[i]->indices.ToInt64Vector("rows"),
              expected.sparse[i]->indices.ToInt64Vector("rows"))
        << what;
  }
  for (size_t i = 0; i < expected.input_grads.size(); ++i) {
    ExpectSame(expected.input_grads[i], actual.input_grads[i], c.tolerance,
               what + ": gradient of input " + std::to_string(i));
  }
}

}  // namespace autodist::gpu::parity
