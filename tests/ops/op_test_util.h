// The table-driven harness every kernel test uses: run one op on given inputs, and check its
// gradients against central finite differences of L = sum_o <output_o, R_o> for fixed random
// R_o (so every output element gets a distinct weight).
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/registry.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops::testing {

inline onnx::AttributeProto AttrInt(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}
inline onnx::AttributeProto AttrFloat(const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}
inline onnx::AttributeProto AttrString(const std::string& name, const std::string& value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
  return a;
}
inline onnx::AttributeProto AttrInts(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (const int64_t v : values) a.add_ints(v);
  return a;
}

// A float32 tensor of `shape` with values uniform in [low, high), reproducible by `seed`.
inline Tensor RandomTensor(const Shape& shape, uint64_t seed, float low = -1.0F,
                           float high = 1.0F) {
  Tensor t(DType::kFloat32, shape);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> dist(low, high);
  float* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) data[i] = dist(engine);
  return t;
}

struct OpCase {
  std::string op_type;
  std::vector<Tensor> inputs = {};  // an undefined Tensor leaves that optional input absent
  std::vector<onnx::AttributeProto> attributes = {};
  size_t num_outputs = 1;
  int64_t opset = 17;
  bool training = true;
  // An activation fused into the op, as the planner fuses one (NodeInfo::fused_activation).
  FusedActivation activation = FusedActivation::kNone;
};

struct OpResult {
  std::vector<Tensor> outputs;
  std::vector<Tensor> input_grads;                      // dense (densified when sparse)
  std::vector<std::unique_ptr<SparseGradient>> sparse;  // as the kernel returned them
};

class OpRunner {
 public:
  // The kernel of `backend` for the case's op (the CPU's unless asked; tests/gpu runs the same
  // cases on the CUDA backend).
  explicit OpRunner(const OpCase& op_case, tensor::DeviceKind backend = tensor::DeviceKind::kCpu)
      : case_(op_case) {
    node_.set_op_type(op_case.op_type);
    node_.set_name("test_" + op_case.op_type);
    for (size_t i = 0; i < op_case.inputs.size(); ++i) {
      node_.add_input(op_case.inputs[i].defined() ? "in" + std::to_string(i) : "");
    }
    for (size_t o = 0; o < op_case.num_outputs; ++o) node_.add_output("out" + std::to_string(o));
    for (const auto& attribute : op_case.attributes) *node_.add_attribute() = attribute;
    // A backend's kernels run on its first device (a GPU backend's Constant puts its value there).
    info_ = std::make_unique<NodeInfo>(
        node_, op_case.opset, Precision::kFp32,
        backend == tensor::DeviceKind::kCpu ? tensor::Device::Cpu() : tensor::Device{backend, 0});
    info_->SetFusedActivation(op_case.activation);
    kernel_ = KernelRegistry::Global().Create(*info_, backend);
  }

  const OpKernel& kernel() const { return *kernel_; }

  // Forward with `inputs` (defaults to the case's); the random engine is re-seeded every call
  // so stochastic ops (Dropout) draw the same mask each time.
  std::vector<Tensor> Forward(const std::vector<Tensor>& inputs,
                              std::unique_ptr<KernelState>* state = nullptr) {
    std::mt19937_64 rng(1234);
    std::vector<const Tensor*> in;
    for (const Tensor& t : inputs) in.push_back(t.defined() ? &t : nullptr);
    ForwardContext ctx(in, case_.num_outputs, case_.training, &rng, info_.get());
    kernel_->Forward(ctx);
    if (state != nullptr) *state = ctx.take_state();
    return ctx.take_outputs();
  }

  // Forward then backward with output gradients `output_grads` (nullptr entries: none).
  OpResult ForwardBackward(const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& output_grads) {
    std::unique_ptr<KernelState> state;
    OpResult result;
    result.outputs = Forward(inputs, &state);
    std::vector<const Tensor*> in;
    std::vector<bool> needs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in.push_back(inputs[i].defined() ? &inputs[i] : nullptr);
      needs.push_back(inputs[i].defined() && inputs[i].dtype() == DType::kFloat32 &&
                      kernel_->IsDifferentiable(i));
    }
    std::vector<const Tensor*> out;
    for (const Tensor& t : result.outputs) out.push_back(t.defined() ? &t : nullptr);
    std::vector<const Tensor*> grads;
    for (const Tensor& g : output_grads) grads.push_back(g.defined() ? &g : nullptr);
    BackwardContext ctx(in, out, grads, needs, state.get(), info_.get());
    kernel_->Backward(ctx);
    result.input_grads = ctx.take_input_grads();
    result.sparse = ctx.take_sparse_grads();
    for (size_t i = 0; i < result.sparse.size(); ++i) {
      // Densified on the host (a device's sparse gradient too).
      if (result.sparse[i]) {
        result.input_grads[i] = Densify(tensor::SparseTo(*result.sparse[i], tensor::Device::Cpu()));
      }
    }
    return result;
  }

 private:
  OpCase case_;
  onnx::NodeProto node_;
  std::unique_ptr<NodeInfo> info_;
  std::unique_ptr<OpKernel> kernel_;
};

// Runs the op once (forward only) and returns its outputs.
inline std::vector<Tensor> RunOp(const OpCase& op_case) {
  OpRunner runner(op_case);
  return runner.Forward(op_case.inputs);
}

// Checks every differentiable float input (or those in `check`) against central differences.
// Tolerance: |analytic - numeric| <= tolerance * max(1, |numeric|).
inline void ExpectGradientsMatch(const OpCase& op_case, std::vector<size_t> check = {},
                                 float epsilon = 1e-3F, float tolerance = 1e-2F) {
  OpRunner runner(op_case);
  const std::vector<Tensor> outputs = runner.Forward(op_case.inputs);
  std::vector<Tensor> weights;
  for (size_t o = 0; o < outputs.size(); ++o) {
    weights.push_back(outputs[o].defined() && outputs[o].dtype() == DType::kFloat32
                          ? RandomTensor(outputs[o].shape(), 99 + o)
                          : Tensor());
  }
  const auto objective = [&](const std::vector<Tensor>& inputs) {
    const std::vector<Tensor> out = runner.Forward(inputs);
    double total = 0.0;
    for (size_t o = 0; o < out.size(); ++o) {
      if (!weights[o].defined()) continue;
      const float* y = out[o].data<float>();
      const float* w = weights[o].data<float>();
      for (int64_t i = 0; i < out[o].numel(); ++i) total += static_cast<double>(y[i]) * w[i];
    }
    return total;
  };
  const OpResult result = runner.ForwardBackward(op_case.inputs, weights);
  if (check.empty()) {
    for (size_t i = 0; i < op_case.inputs.size(); ++i) {
      if (op_case.inputs[i].defined() && op_case.inputs[i].dtype() == DType::kFloat32 &&
          runner.kernel().IsDifferentiable(i)) {
        check.push_back(i);
      }
    }
  }
  ASSERT_FALSE(check.empty()) << op_case.op_type << ": nothing to check";
  for (const size_t i : check) {
    ASSERT_TRUE(result.input_grads[i].defined())
        << op_case.op_type << ": no gradient for input " << i;
    ASSERT_EQ(result.input_grads[i].shape(), op_case.inputs[i].shape())
        << op_case.op_type << ": gradient shape of input " << i;
    std::vector<Tensor> perturbed = op_case.inputs;
    perturbed[i] = op_case.inputs[i].Clone();
    float* x = perturbed[i].data<float>();
    const float* analytic = result.input_grads[i].data<float>();
    for (int64_t k = 0; k < perturbed[i].numel(); ++k) {
      const float original = x[k];
      x[k] = original + epsilon;
      const double plus = objective(perturbed);
      x[k] = original - epsilon;
      const double minus = objective(perturbed);
      x[k] = original;
      const double numeric = (plus - minus) / (2.0 * epsilon);
      EXPECT_NEAR(analytic[k], numeric, tolerance * std::max(1.0, std::abs(numeric)))
          << op_case.op_type << ": d/d input " << i << " element " << k;
    }
  }
}

// Expects RunOp(op) to throw InvalidArgument naming the node ("<Op> node 'test_<Op>'") and
// containing `fragment`.
inline void ExpectNodeError(const OpCase& op, const std::string& fragment) {
  try {
    RunOp(op);
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << message;
    EXPECT_NE(message.find(op.op_type + " node 'test_" + op.op_type + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

// Element i = ((i * mul) % mod - mod / 2) / div: a deterministic input that Python can produce
// with the same formula, for comparisons with PyTorch-computed outputs.
inline Tensor Pattern(const Shape& shape, int64_t mul, int64_t mod, float div = 4.0F) {
  Tensor t(DType::kFloat32, shape);
  float* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    data[i] = static_cast<float>((i * mul) % mod - mod / 2) / div;
  }
  return t;
}

// Expects `actual` to equal `expected` element-wise within `tolerance` (absolute).
inline void ExpectTensorNear(const Tensor& actual, const std::vector<float>& expected,
                             const Shape& shape, float tolerance = 1e-5F) {
  ASSERT_EQ(actual.shape(), shape);
  ASSERT_EQ(actual.numel(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < actual.numel(); ++i) {
    EXPECT_NEAR(actual.GetAsDouble(i), expected[static_cast<size_t>(i)], tolerance)
        << "element " << i;
  }
}

}  // namespace autodist::ops::testing
