// The planner's fusions (runtime/exec/node_fusion.h), Gemm -> Relu and MatMul -> Add of a row
// bias: which pairs it fuses and which it leaves, on graphs built here; and that fused and
// unfused plans give the same bits, forward and backward, on these graphs, on the exported MLPs
// and on the Transformer.
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
#include "tests/onnx_graph_builder.h"

namespace autodist::exec {
namespace {

using autodist::testing::AddInitializer;
using autodist::testing::AddInput;
using autodist::testing::AddNode;
using autodist::testing::AddOutput;
using autodist::testing::ElementCount;
using autodist::testing::NewModel;
using autodist::testing::SetIntAttribute;
using autodist::testing::SetTensorType;

using ::testing::HasSubstr;

// A FLOAT initializer of `dims` uniform in [-1, 1), drawn with `seed`.
void AddWeight(onnx::GraphProto* graph, const std::string& name, const std::vector<int64_t>& dims,
               uint64_t seed) {
  onnx::TensorProto* tensor = AddInitializer(graph, name, dims);
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> value(-1.0F, 1.0F);
  const int64_t count = ElementCount(dims);
  for (int64_t i = 0; i < count; ++i) tensor->add_float_data(value(engine));
}

// loss = ReduceMean(`input`) over every axis, a scalar graph output, by the node "mean".
void AddMeanLoss(onnx::GraphProto* graph, const std::string& input) {
  SetIntAttribute(AddNode(graph, "ReduceMean", {input}, {"loss"}, "mean"), "keepdims", 0);
  AddOutput(graph, "loss", {});
}

// x [4, 6] -> Gemm fc1 (w1 [5, 6], b1 [5]) -> h -> Relu act1 -> a -> Gemm fc2 (w2 [3, 5], b2)
// -> logits -> ReduceMean -> loss (a scalar output).
onnx::ModelProto TwoLayers() {
  onnx::ModelProto model = NewModel("two_layers");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {4, 6});
  AddWeight(graph, "w1", {5, 6}, 1);
  AddWeight(graph, "b1", {5}, 2);
  AddWeight(graph, "w2", {3, 5}, 3);
  AddWeight(graph, "b2", {3}, 4);
  SetIntAttribute(AddNode(graph, "Gemm", {"x", "w1", "b1"}, {"h"}, "fc1"), "transB", 1);
  AddNode(graph, "Relu", {"h"}, {"a"}, "act1");
  SetIntAttribute(AddNode(graph, "Gemm", {"a", "w2", "b2"}, {"logits"}, "fc2"), "transB", 1);
  AddMeanLoss(graph, "logits");
  return model;
}

// x [2, 3, 4] -> MatMul proj (w [4, 5]) -> p -> Add bias (p, b [5]) -> y -> ReduceMean -> loss:
// a Linear layer on a sequence, as PyTorch exports it.
onnx::ModelProto SequenceLinear() {
  onnx::ModelProto model = NewModel("sequence_linear");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {2, 3, 4});
  AddWeight(graph, "w", {4, 5}, 5);
  AddWeight(graph, "b", {5}, 6);
  AddNode(graph, "MatMul", {"x", "w"}, {"p"}, "proj");
  AddNode(graph, "Add", {"p", "b"}, {"y"}, "bias");
  AddMeanLoss(graph, "y");
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
  AddOutput(model.mutable_graph(), "h", {4, 5});
  EXPECT_TRUE(Fused(Plan(model)).empty());
}

TEST(ActivationFusionTest, AGemmOutputAnotherNodeReadsIsNotFused) {
  onnx::ModelProto model = TwoLayers();
  onnx::GraphProto* graph = model.mutable_graph();
  // fc2 reads a + h: the product is needed beside its Relu. The Add goes before fc2.
  AddNode(graph, "Add", {"a", "h"}, {"sum"}, "skip");
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
  AddOutput(model.mutable_graph(), "a", {4, 5});
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

// `count` feeds of "x" of `shape`, uniform in [-1, 1), batch b drawn with seed `first_seed` + b.
std::vector<Feeds> RandomX(const Shape& shape, int count, uint64_t first_seed) {
  std::vector<Feeds> batches;
  for (int b = 0; b < count; ++b) {
    Tensor x(DType::kFloat32, shape);
    std::mt19937_64 engine(first_seed + static_cast<uint64_t>(b));
    std::uniform_real_distribution<float> value(-1.0F, 1.0F);
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = value(engine);
    batches.push_back({{"x", x}});
  }
  return batches;
}

onnx::ModelProto Load(const std::string& path) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFileBytes(path, "model")));
  return model;
}

TEST(BiasFusionTest, FusesAMatMulWhoseOnlyReaderAddsARowBias) {
  const ExecutionPlan plan = Plan(SequenceLinear());
  ASSERT_EQ(plan.nodes.size(), 2U);
  EXPECT_EQ(Fused(plan), std::vector<std::string>{"bias"});
  const PlannedNode& fused = plan.nodes[0];
  EXPECT_EQ(fused.info->name(), "proj");
  EXPECT_TRUE(fused.info->fused_bias());
  EXPECT_EQ(fused.info->fused_activation(), ops::FusedActivation::kNone);
  // The bias is the step's third input; the product between the two is never planned.
  ASSERT_EQ(fused.inputs.size(), 3U);
  EXPECT_EQ(fused.inputs[2], plan.value_ids.at("b"));
  EXPECT_FALSE(plan.value_ids.contains("p"));
  ASSERT_EQ(fused.outputs.size(), 1U);
  EXPECT_EQ(fused.outputs[0], plan.value_ids.at("y"));
}

TEST(BiasFusionTest, BMayBeTheTransposeOfAWeight) {
  // PyTorch's export in training mode: W [5, 4] -> Transpose -> B [4, 5].
  onnx::ModelProto model = SequenceLinear();
  onnx::GraphProto* graph = model.mutable_graph();
  onnx::TensorProto* weight = graph->mutable_initializer(0);
  weight->set_dims(0, 5);
  weight->set_dims(1, 4);
  AddNode(graph, "Transpose", {"w"}, {"w_t"}, "wt");
  // proj bias mean wt -> wt proj bias mean: shape inference wants the graph sorted.
  graph->mutable_node()->SwapElements(3, 2);
  graph->mutable_node()->SwapElements(2, 1);
  graph->mutable_node()->SwapElements(1, 0);
  graph->mutable_node(1)->set_input(1, "w_t");
  const ExecutionPlan plan = Plan(model);
  EXPECT_EQ(Fused(plan), std::vector<std::string>{"bias"});
  // A transpose with another permutation is not a matrix's.
  onnx::AttributeProto* perm = graph->mutable_node(0)->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(0);
  perm->add_ints(1);
  weight->set_dims(0, 4);
  weight->set_dims(1, 5);
  EXPECT_TRUE(Fused(Plan(model)).empty());
}

TEST(BiasFusionTest, TheBiasMayBeEitherOperandOfTheAdd) {
  onnx::ModelProto model = SequenceLinear();
  onnx::NodeProto* add = model.mutable_graph()->mutable_node(1);
  add->set_input(0, "b");
  add->set_input(1, "p");
  EXPECT_EQ(Fused(Plan(model)), std::vector<std::string>{"bias"});
}

TEST(BiasFusionTest, OnlyARowBiasOnAWeightMatrixIsFused) {
  // The bias fed as a graph input: a feed could give it any shape.
  onnx::ModelProto fed_bias = SequenceLinear();
  AddInput(fed_bias.mutable_graph(), "b", {5});
  EXPECT_TRUE(Fused(Plan(fed_bias)).empty());
  // B not an initializer: the product's last axis is unknown when planning.
  onnx::ModelProto fed_weight = SequenceLinear();
  AddInput(fed_weight.mutable_graph(), "w", {4, 5});
  EXPECT_TRUE(Fused(Plan(fed_weight)).empty());
  // A bias of rank 2 broadcasts the same, but is not a row bias of the kernel's.
  onnx::ModelProto matrix_bias = SequenceLinear();
  onnx::TensorProto* row = matrix_bias.mutable_graph()->mutable_initializer(1);
  row->set_dims(0, 1);
  row->add_dims(5);
  EXPECT_TRUE(Fused(Plan(matrix_bias)).empty());
  // The product read by another node too.
  onnx::ModelProto read_twice = SequenceLinear();
  read_twice.mutable_graph()->mutable_node(2)->set_input(0, "p");
  EXPECT_TRUE(Fused(Plan(read_twice)).empty());
  // Another node than Add.
  onnx::ModelProto sub = SequenceLinear();
  sub.mutable_graph()->mutable_node(1)->set_op_type("Sub");
  EXPECT_TRUE(Fused(Plan(sub)).empty());
}

TEST(BiasFusionTest, ASequenceLinearTrainsToTheSameBitsFusedOrNot) {
  ExpectSameTraining(SequenceLinear(), "sequence_linear.onnx", RandomX({2, 3, 4}, 3, 10), 1);
}

TEST(BiasFusionTest, TheTransformerTrainsToTheSameBitsFusedOrNot) {
  // Every Linear layer on the sequence: the embedding, and each encoder layer's qkv, projection
  // and two feed-forward layers.
  const std::string path =
      std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist/fmnist_transformer.onnx";
  const onnx::ModelProto model = Load(path);
  ExpectSameTraining(model, path, ImageBatches(model, 2), 9);
}

TEST(ActivationFusionTest, TwoLayersTrainToTheSameBitsFusedOrNot) {
  ExpectSameTraining(TwoLayers(), "two_layers.onnx", RandomX({4, 6}, 3, 0), 1);
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
