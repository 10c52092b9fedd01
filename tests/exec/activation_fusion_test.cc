// The planner's Gemm -> Relu fusion (runtime/exec/activation_fusion.h): which pairs it fuses and
// which it leaves, on graphs built here; and that fused and unfused plans give the same bits,
// forward and backward, on these graphs and on the exported MLPs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/execution_plan.h"
#include "runtime/exec/session.h"
#include "tests/error_of.h"

namespace autodist::exec {
namespace {

using ::testing::HasSubstr;

void SetTensorType(onnx::ValueInfoProto* info, const std::string& name,
                   const std::vector<int64_t>& dims) {
  info->set_name(name);
  auto* type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = type->mutable_shape();
  shape->clear_dim();
  for (const int64_t dim : dims) {
    if (dim < 0) {
      shape->add_dim()->set_dim_param("d" + std::to_string(shape->dim_size()));
    } else {
      shape->add_dim()->set_dim_value(dim);
    }
  }
}

void AddWeight(onnx::GraphProto* graph, const std::string& name, const std::vector<int64_t>& dims,
               uint64_t seed) {
  onnx::TensorProto* tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (const int64_t dim : dims) {
    tensor->add_dims(dim);
    count *= dim;
  }
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  for (int64_t i = 0; i < count; ++i) tensor->add_float_data(value(engine));
}

onnx::NodeProto* AddNode(onnx::GraphProto* graph, const std::string& op, const std::string& name,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs) {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const std::string& input : inputs) node->add_input(input);
  for (const std::string& output : outputs) node->add_output(output);
  return node;
}

void SetTransB(onnx::NodeProto* node) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name("transB");
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(1);
}

// x [4, 6] -> Gemm fc1 (w1 [5, 6], b1 [5]) -> h -> Relu act1 -> a -> Gemm fc2 (w2 [3, 5], b2)
// -> logits -> ReduceMean -> loss (a scalar output).
onnx::ModelProto TwoLayers() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(14);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("two_layers");
  SetTensorType(graph->add_input(), "x", {4, 6});
  AddWeight(graph, "w1", {5, 6}, 1);
  AddWeight(graph, "b1", {5}, 2);
  AddWeight(graph, "w2", {3, 5}, 3);
  AddWeight(graph, "b2", {3}, 4);
  SetTransB(AddNode(graph, "Gemm", "fc1", {"x", "w1", "b1"}, {"h"}));
  AddNode(graph, "Relu", "act1", {"h"}, {"a"});
  SetTransB(AddNode(graph, "Gemm", "fc2", {"a", "w2", "b2"}, {"logits"}));
  onnx::NodeProto* mean = AddNode(graph, "ReduceMean", "mean", {"logits"}, {"loss"});
  onnx::AttributeProto* keepdims = mean->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(onnx::AttributeProto::INT);
  keepdims->set_i(0);
  SetTensorType(graph->add_output(), "loss", {});
  return model;
}

ExecutionPlan Plan(const onnx::ModelProto& model, const std::string& loss = "", bool fuse = true) {
  std::vector<Tensor> initializers;
  return PlanExecution(model, "two_layers.onnx", loss, initializers, tensor::Device::Cpu(),
                       ops::Precision::kFp32, fuse);
}

// The names of the activation nodes the plan fused, in plan order.
std::vector<std::string> Fused(const ExecutionPlan& plan) {
  std::vector<std::string> names;
  for (const PlannedNode& node : plan.nodes) {
    if (node.fused != nullptr) names.push_back(node.fused->name());
  }
  return names;
}

std::string ErrorOf(const std::function<void()>& body) {
  return autodist::testing::ErrorOf(body).what();
}

TEST(ActivationFusionTest, FusesAGemmWhoseOnlyReaderIsARelu) {
  const ExecutionPlan plan = Plan(TwoLayers());
  ASSERT_EQ(plan.nodes.size(), 3u);
  EXPECT_EQ(Fused(plan), std::vector<std::string>{"act1"});
  const PlannedNode& fused = plan.nodes[0];
  EXPECT_EQ(fused.info->name(), "fc1");
  EXPECT_EQ(fused.info->fused_activation(), ops::FusedActivation::kRelu);
  // The step writes the Relu's output; the tensor between the two is never planned.
  EXPECT_FALSE(plan.value_ids.contains("h"));
  ASSERT_EQ(fused.outputs.size(), 1u);
  EXPECT_EQ(fused.outputs[0], plan.value_ids.at("a"));
  EXPECT_EQ(plan.values[static_cast<size_t>(fused.outputs[0])].producer, 0);
  // Backward reads Relu's gradient off that output, so it is kept.
  EXPECT_TRUE(fused.in_backward);
  EXPECT_TRUE(plan.values[static_cast<size_t>(plan.value_ids.at("a"))].keep_for_backward);
}

TEST(ActivationFusionTest, OffPlansEveryNodeAsAStep) {
  const ExecutionPlan plan = Plan(TwoLayers(), "", /*fuse=*/false);
  EXPECT_EQ(plan.nodes.size(), 4u);
  EXPECT_TRUE(Fused(plan).empty());
  EXPECT_TRUE(plan.value_ids.contains("h"));
}

TEST(ActivationFusionTest, AGemmOutputThatIsAGraphOutputIsNotFused) {
  onnx::ModelProto model = TwoLayers();
  SetTensorType(model.mutable_graph()->add_output(), "h", {4, 5});
  EXPECT_TRUE(Fused(Plan(model)).empty());
}

TEST(ActivationFusionTest, AGemmOutputAnotherNodeReadsIsNotFused) {
  onnx::ModelProto model = TwoLayers();
  onnx::GraphProto* graph = model.mutable_graph();
  // fc2 reads a + h: the product is needed beside its Relu. The Add goes before fc2.
  AddNode(graph, "Add", "skip", {"a", "h"}, {"sum"});
  graph->mutable_node()->SwapElements(4, 2);  // fc1 act1 skip mean fc2
  graph->mutable_node()->SwapElements(3, 4);  // fc1 act1 skip fc2 mean
  graph->mutable_node(3)->set_input(0, "sum");
  EXPECT_TRUE(Fused(Plan(model)).empty());
}

TEST(ActivationFusionTest, AGemmOutputNamedAsTheLossIsNotFused) {
  EXPECT_TRUE(Fused(Plan(TwoLayers(), "h")).empty());
}

TEST(ActivationFusionTest, OtherActivationsAreNotFused) {
  onnx::ModelProto model = TwoLayers();
  model.mutable_graph()->mutable_node(1)->set_op_type("Sigmoid");
  EXPECT_TRUE(Fused(Plan(model)).empty());
}

TEST(ActivationFusionTest, AReluOfAnotherDomainKeepsItsError) {
  onnx::ModelProto model = TwoLayers();
  auto* opset = model.add_opset_import();
  opset->set_domain("com.example");
  opset->set_version(1);
  model.mutable_graph()->mutable_node(1)->set_domain("com.example");
  const std::string fused = ErrorOf([&] { Plan(model); });
  EXPECT_THAT(fused, HasSubstr("node 'act1' uses op Relu of domain 'com.example'"));
  EXPECT_EQ(fused, ErrorOf([&] { Plan(model, "", false); }));
}

TEST(ActivationFusionTest, ARelusOutputThatIsAGraphOutputIsFusedAndReturned) {
  onnx::ModelProto model = TwoLayers();
  SetTensorType(model.mutable_graph()->add_output(), "a", {4, 5});
  EXPECT_EQ(Fused(Plan(model)), std::vector<std::string>{"act1"});
  Session fused(model, "two_layers.onnx", {});
  SessionOptions options;
  options.fuse_activations = false;
  Session unfused(model, "two_layers.onnx", options);
  Tensor x = Tensor::Full({4, 6}, 0.5F);
  x.data<float>()[3] = -2.0F;
  const Tensor a = fused.Run({{"x", x}}, false).at("a");
  const Tensor expected = unfused.Run({{"x", x}}, false).at("a");
  ASSERT_EQ(a.shape(), expected.shape());
  EXPECT_EQ(std::memcmp(a.data<float>(), expected.data<float>(), sizeof(float) * 20), 0);
}

TEST(ActivationFusionTest, BadShapesAreTheGemmNodesErrorFusedOrNot) {
  onnx::ModelProto model = TwoLayers();
  // Free dimensions, so that only the kernel sees the mismatch.
  SetTensorType(model.mutable_graph()->mutable_input(0), "x", {-1, -1});
  const auto run = [&](bool fuse) {
    SessionOptions options;
    options.fuse_activations = fuse;
    Session session(model, "two_layers.onnx", options);
    session.Run({{"x", Tensor::Full({4, 7}, 1.0F)}}, true);
  };
  const std::string fused = ErrorOf([&] { run(true); });
  EXPECT_THAT(fused, HasSubstr("Gemm node 'fc1'"));
  EXPECT_THAT(fused, HasSubstr("inner dimensions differ"));
  EXPECT_EQ(fused, ErrorOf([&] { run(false); }));
}

// Fused and unfused sessions over the same batches and the same plain SGD updates: every loss,
// output and gradient the same bits, step after step.
void ExpectSameTraining(const onnx::ModelProto& model, const std::string& source,
                        const std::vector<Feeds>& batches, size_t expected_fusions) {
  std::vector<Tensor> initializers;
  EXPECT_EQ(Fused(PlanExecution(model, source, "", initializers)).size(), expected_fusions);
  Session fused(model, source, {});
  SessionOptions options;
  options.fuse_activations = false;
  Session unfused(model, source, options);
  const auto same = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() &&
           std::memcmp(a.data<float>(), b.data<float>(),
                       static_cast<size_t>(a.numel()) * sizeof(float)) == 0;
  };
  for (size_t step = 0; step < batches.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const Session::StepResult a = fused.ForwardBackward(batches[step]);
    const Session::StepResult b = unfused.ForwardBackward(batches[step]);
    EXPECT_EQ(std::memcmp(&a.loss, &b.loss, sizeof a.loss), 0) << a.loss << " vs " << b.loss;
    for (const auto& [name, output] : b.outputs) {
      if (output.dtype() == DType::kFloat32) {
        EXPECT_TRUE(same(a.outputs.at(name), output)) << name;
      }
    }
    ASSERT_EQ(a.gradients.size(), b.gradients.size());
    for (const auto& [name, gradient] : b.gradients) {
      ASSERT_TRUE(gradient.dense.defined()) << name;
      EXPECT_TRUE(same(a.gradients.at(name).dense, gradient.dense)) << name;
      for (Session* session : {&fused, &unfused}) {
        const Tensor& g = (session == &fused ? a : b).gradients.at(name).dense;
        Tensor& w = session->variable(name);
        for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] -= 0.05F * g.data<float>()[i];
      }
    }
  }
}

std::vector<Feeds> ImageBatches(const onnx::ModelProto& model, int count) {
  const auto& dims = model.graph().input(0).type().tensor_type().shape().dim();
  Shape shape{32};
  for (int d = 1; d < dims.size(); ++d) shape.push_back(dims[d].dim_value());
  std::mt19937_64 engine(7);
  std::uniform_real_distribution<float> pixel(0.0F, 1.0F);
  std::vector<Feeds> batches;
  for (int b = 0; b < count; ++b) {
    Tensor image(DType::kFloat32, shape);
    for (int64_t i = 0; i < image.numel(); ++i) image.data<float>()[i] = pixel(engine);
    Tensor label(DType::kInt64, {32});
    for (int64_t i = 0; i < 32; ++i) label.data<int64_t>()[i] = static_cast<int64_t>(engine() % 10);
    batches.push_back({{model.graph().input(0).name(), image}, {"label", label}});
  }
  return batches;
}

onnx::ModelProto Load(const std::string& path) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFileBytes(path, "model")));
  return model;
}

TEST(ActivationFusionTest, TwoLayersTrainToTheSameBitsFusedOrNot) {
  std::vector<Feeds> batches;
  for (int b = 0; b < 3; ++b) {
    Tensor x(DType::kFloat32, {4, 6});
    std::mt19937_64 engine(static_cast<uint64_t>(b));
    std::uniform_real_distribution<float> value(-1.0F, 1.0F);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = value(engine);
    batches.push_back({{"x", x}});
  }
  ExpectSameTraining(TwoLayers(), "two_layers.onnx", batches, 1);
}

TEST(ActivationFusionTest, TheFashionMnistMlpTrainsToTheSameBitsFusedOrNot) {
  const std::string path =
      std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist/fmnist_mlp.onnx";
  const onnx::ModelProto model = Load(path);
  ExpectSameTraining(model, path, ImageBatches(model, 3), 2);
}

TEST(ActivationFusionTest, TheFixtureMlpTrainsToTheSameBitsFusedOrNot) {
  const std::string path = std::string(AUTODIST_FIXTURES_DIR) + "/models/mlp.onnx";
  const onnx::ModelProto model = Load(path);
  ExpectSameTraining(model, path, ImageBatches(model, 3), 2);
}

}  // namespace
}  // namespace autodist::exec
