// Whole models on the GPU: a Session on cuda:0 plans the CUDA kernels, keeps the variables on the
// device, and its forward and backward agree with the CPU session's on the same batch. A model
// with ops the CUDA backend lacks is refused at planning, all of them named (this runs without a
// GPU too: planning touches no device).
#include "runtime/exec/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/execution_plan.h"
#include "runtime/ops/registry.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using exec::Feeds;
using exec::Session;
using exec::SessionOptions;
using tensor::Device;
using tensor::Tensor;

onnx::ModelProto LoadExample(const std::string& name) {
  onnx::ModelProto model;
  const std::string bytes =
      ReadFileBytes(std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist/" + name, "model");
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

Feeds Batch(int64_t batch, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> pixel(0.0F, 1.0F);
  Tensor image(tensor::DType::kFloat32, {batch, 1, 28, 28});
  for (int64_t i = 0; i < image.numel(); ++i) image.data<float>()[i] = pixel(engine);
  Tensor label(tensor::DType::kInt64, {batch});
  for (int64_t i = 0; i < batch; ++i)
    label.data<int64_t>()[i] = static_cast<int64_t>(engine() % 10);
  return {{"image", image}, {"label", label}};
}

// |cuda - cpu| <= tolerance * max(1, |cpu|) element by element.
void ExpectClose(const Tensor& cpu, const Tensor& cuda, float tolerance, const std::string& what) {
  ASSERT_EQ(cuda.device(), Device::Cuda(0)) << what;
  const Tensor back = cuda.To(Device::Cpu());
  ASSERT_EQ(cpu.shape(), back.shape()) << what;
  float worst = 0.0F;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    const float x = cpu.data<float>()[i];
    worst = std::max(worst, std::abs(x - back.data<float>()[i]) / std::max(1.0F, std::abs(x)));
  }
  EXPECT_LE(worst, tolerance) << what;
}

TEST(CudaSessionTest, OpsWithoutACudaKernelAreAllNamedWhenPlanning) {
  InstallCudaTensorMemory();
  SessionOptions options;
  options.device = Device::Cuda(0);
  // PyTorch's export of nn.LSTM: no backend has its LSTM and ConstantOfShape (every op the CPU
  // has, cuda has too).
  const std::string path = std::string(AUTODIST_SOURCE_DIR) + "/tests/fixtures/models/lstm.onnx";
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(ReadFileBytes(path, "model")));
  try {
    Session session(model, "lstm.onnx", options);
    FAIL() << "the LSTM export was planned on cuda";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), ::testing::HasSubstr("model 'lstm.onnx': cuda has no kernel "));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("LSTM (node "));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("ConstantOfShape (node "));
  }
}

// One training step of `model_name` on both backends: the loss, the logits and every gradient,
// and the state a training forward writes (BatchNorm's running statistics).
void ExpectStepMatchesTheCpu(const std::string& model_name, float gradient_tolerance) {
  InstallCudaTensorMemory();
  const onnx::ModelProto model = LoadExample(model_name);
  SessionOptions cuda_options;
  cuda_options.device = Device::Cuda(0);
  Session cpu(model, model_name, SessionOptions{});
  Session cuda(model, model_name, cuda_options);
  for (const std::string& name : cuda.trainable_names()) {
    EXPECT_EQ(cuda.variable(name).device(), Device::Cuda(0)) << name;
  }
  const Feeds feeds = Batch(256, 7);
  const Session::StepResult expected = cpu.ForwardBackward(feeds, nullptr);
  const Session::StepResult actual = cuda.ForwardBackward(feeds, nullptr);
  EXPECT_NEAR(actual.loss, expected.loss, 1e-5 * std::max(1.0F, std::abs(expected.loss)));
  ExpectClose(expected.outputs.at("logits"), actual.outputs.at("logits"), 1e-5F, "logits");
  ASSERT_EQ(actual.gradients.size(), expected.gradients.size());
  for (const auto& [name, gradient] : expected.gradients) {
    ASSERT_TRUE(actual.gradients.contains(name)) << name;
    ExpectClose(gradient.dense, actual.gradients.at(name).dense, gradient_tolerance,
                "gradient of " + name);
  }
  for (const std::string& name : cpu.state_names()) {
    ExpectClose(cpu.state(name), cuda.state(name), 1e-5F, "state " + name);
  }
}

TEST(CudaSessionTest, TheMlpsForwardAndBackwardMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ExpectStepMatchesTheCpu("fmnist_mlp.onnx", 1e-4F);
}

// The steps the planner fused on cuda, as "op_type: fused op_type". Planning touches no device.
std::vector<std::string> FusedOnCuda(const std::string& model_name) {
  const onnx::ModelProto model = LoadExample(model_name);
  std::vector<Tensor> initializers;
  const exec::ExecutionPlan plan = exec::PlanExecution(model, model_name, "", initializers,
                                                       Device::Cuda(0), ops::Precision::kFp32);
  std::vector<std::string> fused;
  for (const exec::PlannedNode& node : plan.nodes) {
    if (node.fused != nullptr) fused.push_back(node.info->op_type() + ": " + node.fused->op_type());
  }
  return fused;
}

// The planner fuses on cuda as on the CPU, the CUDA kernels taking the fusions: the MLP's two
// Gemm -> Relu pairs (the epilogue's Relu; planning it touches no device, so this runs without
// a GPU), and the Transformer's nine Linear layers on its sequence, MatMul -> Add (the
// epilogue's bias; its Constant nodes' values go to the device when planned).
TEST(CudaSessionTest, TheMlpsGemmReluPairsAreFusedOnCuda) {
  EXPECT_EQ(FusedOnCuda("fmnist_mlp.onnx"), std::vector<std::string>(2, "Gemm: Relu"));
}

TEST(CudaSessionTest, TheCudaMatMulTakesAFusedBias) {
  onnx::NodeProto proto;
  proto.set_op_type("MatMul");
  proto.set_name("proj");
  proto.add_input("x");
  proto.add_input("w");
  proto.add_output("y");
  const ops::NodeInfo node(proto, 17);
  EXPECT_TRUE(
      ops::KernelRegistry::Global().Create(node, tensor::DeviceKind::kCuda)->TakesFusedBias());
}

TEST(CudaSessionTest, TheTransformersMatMulAddPairsAreFusedOnCuda) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  EXPECT_EQ(FusedOnCuda("fmnist_transformer.onnx"), std::vector<std::string>(9, "MatMul: Add"));
}

// The fused steps on the GPU (the epilogue's Relu or bias) against the same model run unfused
// there (the product, then the Relu or Add kernel): the same training step to float tolerance
// (cuBLASLt may pick another kernel for another epilogue, adding in another order).
void ExpectFusedMatchesUnfusedOnCuda(const std::string& model_name) {
  InstallCudaTensorMemory();
  const onnx::ModelProto model = LoadExample(model_name);
  SessionOptions options;
  options.device = Device::Cuda(0);
  Session fused(model, model_name, options);
  options.fuse_activations = false;
  Session unfused(model, model_name, options);
  const Feeds feeds = Batch(256, 11);
  const Session::StepResult expected = unfused.ForwardBackward(feeds, nullptr);
  const Session::StepResult actual = fused.ForwardBackward(feeds, nullptr);
  EXPECT_NEAR(actual.loss, expected.loss, 1e-5 * std::max(1.0F, std::abs(expected.loss)));
  ExpectClose(expected.outputs.at("logits").To(Device::Cpu()), actual.outputs.at("logits"), 1e-5F,
              "logits");
  ASSERT_EQ(actual.gradients.size(), expected.gradients.size());
  for (const auto& [name, gradient] : expected.gradients) {
    ASSERT_TRUE(actual.gradients.contains(name)) << name;
    ExpectClose(gradient.dense.To(Device::Cpu()), actual.gradients.at(name).dense, 1e-4F,
                "gradient of " + name);
  }
}

TEST(CudaSessionTest, TheMlpFusedOnCudaMatchesItUnfused) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ExpectFusedMatchesUnfusedOnCuda("fmnist_mlp.onnx");
}

TEST(CudaSessionTest, TheTransformerFusedOnCudaMatchesItUnfused) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ExpectFusedMatchesUnfusedOnCuda("fmnist_transformer.onnx");
}

// Conv, BatchNormalization (training statistics, running statistics) and MaxPool on the GPU.
// An element of conv2's weight gradient sums 50,176 products (256 images of 14 x 14 positions)
// whose sum is far smaller than the products: float sums in the two backends' orders differed by
// 1.4e-4 of it on an H200, so gradients are held to 1e-3 here (the loss and logits to 1e-5).
TEST(CudaSessionTest, TheCnnsForwardAndBackwardMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ExpectStepMatchesTheCpu("fmnist_cnn.onnx", 1e-3F);
}

// Residual sums (a value read twice, its gradients summed), strided and 1x1 convolutions and
// GlobalAveragePool: the small ResNet of examples/fashion-mnist. Gradients as the CNN's.
TEST(CudaSessionTest, TheResNetsForwardAndBackwardMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ExpectStepMatchesTheCpu("fmnist_resnet.onnx", 1e-3F);
}

// Attention from MatMul, Softmax, Transpose, Reshape and Split; LayerNormalization; GELU;
// Constant nodes; ReduceMean: the Transformer of examples/fashion-mnist.
TEST(CudaSessionTest, TheTransformersForwardAndBackwardMatchTheCpu) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ExpectStepMatchesTheCpu("fmnist_transformer.onnx", 1e-3F);
}

}  // namespace
}  // namespace autodist::gpu
