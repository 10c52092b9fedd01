// GraphItem on the committed fixtures: the variable table as PyTorch / onnx.helper produced it
// (tests/fixtures/generate.py), sparsity, control flow, BatchNorm state and gradient names.
#include "runtime/graph/graph_item.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace autodist::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string Fixture(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/models/" + name;
}

std::vector<std::string> Names(const std::vector<Variable>& variables) {
  std::vector<std::string> names;
  for (const Variable& variable : variables) names.push_back(variable.name);
  return names;
}

const Variable& Find(const GraphItem& item, const std::string& name) {
  for (const Variable& variable : item.variables()) {
    if (variable.name == name) return variable;
  }
  throw std::runtime_error("no variable " + name);
}

// Checks name, shape, bytes and that the variable is a dense trainable float with `v_grad`.
void ExpectDenseFloat(const Variable& variable, const std::string& name,
                      const std::vector<int64_t>& shape) {
  SCOPED_TRACE(name);
  EXPECT_EQ(variable.name, name);
  EXPECT_EQ(variable.shape, shape);
  EXPECT_EQ(variable.data_type, 1);
  EXPECT_EQ(variable.bytes, NumElements(shape) * 4);
  EXPECT_FALSE(variable.sparse);
  EXPECT_TRUE(variable.partitionable);
  EXPECT_TRUE(variable.trainable);
  EXPECT_EQ(variable.gradient_name, name + "_grad");
}

TEST(GraphItemTest, MlpVariablesAreTheLinearLayersInOrder) {
  const GraphItem item = GraphItem::Load(Fixture("mlp.onnx"));
  EXPECT_EQ(item.source(), Fixture("mlp.onnx"));
  const std::vector<Variable>& v = item.variables();
  ASSERT_EQ(v.size(), 6u);
  ExpectDenseFloat(v[0], "fc1.weight", {256, 784});
  ExpectDenseFloat(v[1], "fc1.bias", {256});
  ExpectDenseFloat(v[2], "fc2.weight", {128, 256});
  ExpectDenseFloat(v[3], "fc2.bias", {128});
  ExpectDenseFloat(v[4], "fc3.weight", {10, 128});
  ExpectDenseFloat(v[5], "fc3.bias", {10});
  EXPECT_EQ(v[0].bytes, 802816);
  EXPECT_EQ(Names(item.TrainableVariables()), Names(v));
}

TEST(GraphItemTest, MlpProtoPacksModelVariablesAndGradientPairs) {
  const GraphItem item = GraphItem::Load(Fixture("mlp.onnx"));
  const proto::GraphItem message = item.ToProto(/*strip_weights=*/false);
  EXPECT_EQ(message.graph_def().type_url(), "type.googleapis.com/onnx.ModelProto");
  const std::map<std::string, std::string> pairs(message.grad_target_pairs().begin(),
                                                 message.grad_target_pairs().end());
  EXPECT_EQ(pairs, (std::map<std::string, std::string>{{"fc1.weight_grad", "fc1.weight"},
                                                       {"fc1.bias_grad", "fc1.bias"},
                                                       {"fc2.weight_grad", "fc2.weight"},
                                                       {"fc2.bias_grad", "fc2.bias"},
                                                       {"fc3.weight_grad", "fc3.weight"},
                                                       {"fc3.bias_grad", "fc3.bias"}}));
  ASSERT_EQ(message.info().variables_size(), 6);
  for (int i = 0; i < 6; ++i) {
    proto::VariableInfo info;
    ASSERT_TRUE(message.info().variables(i).UnpackTo(&info));
    const Variable& variable = item.variables()[i];
    EXPECT_EQ(info.name(), variable.name);
    EXPECT_EQ(std::vector<int64_t>(info.shape().begin(), info.shape().end()), variable.shape);
    EXPECT_EQ(info.data_type(), variable.data_type);
    EXPECT_EQ(info.bytes(), variable.bytes);
    EXPECT_EQ(info.sparse(), variable.sparse);
    EXPECT_EQ(info.partitionable(), variable.partitionable);
    EXPECT_EQ(info.trainable(), variable.trainable);
    EXPECT_EQ(info.gradient_name(), variable.gradient_name);
  }
}

TEST(GraphItemTest, CnnBatchNormRunningStatisticsAreNotTrainable) {
  const GraphItem item = GraphItem::Load(Fixture("cnn.onnx"));
  EXPECT_THAT(
      Names(item.variables()),
      ElementsAre("conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "bn1.running_mean",
                  "bn1.running_var", "conv2.weight", "conv2.bias", "bn2.weight", "bn2.bias",
                  "bn2.running_mean", "bn2.running_var", "fc.weight", "fc.bias"));
  ExpectDenseFloat(Find(item, "conv1.weight"), "conv1.weight", {8, 1, 3, 3});
  ExpectDenseFloat(Find(item, "conv2.weight"), "conv2.weight", {16, 8, 3, 3});
  ExpectDenseFloat(Find(item, "bn2.weight"), "bn2.weight", {16});  // BN scale is learned
  ExpectDenseFloat(Find(item, "bn2.bias"), "bn2.bias", {16});
  ExpectDenseFloat(Find(item, "fc.weight"), "fc.weight", {10, 16 * 7 * 7});
  for (const char* name :
       {"bn1.running_mean", "bn1.running_var", "bn2.running_mean", "bn2.running_var"}) {
    SCOPED_TRACE(name);
    const Variable& stat = Find(item, name);
    EXPECT_FALSE(stat.trainable);
    EXPECT_FALSE(stat.sparse);
    EXPECT_TRUE(stat.partitionable);
    EXPECT_THAT(stat.gradient_name, IsEmpty());
    EXPECT_EQ(stat.bytes, stat.shape[0] * 4);
  }
  EXPECT_THAT(Names(item.TrainableVariables()),
              ElementsAre("conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight",
                          "conv2.bias", "bn2.weight", "bn2.bias", "fc.weight", "fc.bias"));
  const proto::GraphItem message = item.ToProto(false);
  EXPECT_EQ(message.grad_target_pairs_size(), 10);
  EXPECT_FALSE(message.grad_target_pairs().contains("bn1.running_mean_grad"));
  EXPECT_EQ(message.info().variables_size(), 14);  // the table lists non-trainable ones too
}

TEST(GraphItemTest, EmbeddingTableIsSparseAndLinearIsDense) {
  const GraphItem item = GraphItem::Load(Fixture("embedding.onnx"));
  ASSERT_THAT(Names(item.variables()), ElementsAre("embedding.weight", "fc.weight", "fc.bias"));
  const Variable& table = item.variables()[0];
  EXPECT_TRUE(table.sparse);
  EXPECT_EQ(table.shape, (std::vector<int64_t>{1000, 64}));
  EXPECT_EQ(table.bytes, 1000 * 64 * 4);
  EXPECT_TRUE(table.trainable);
  EXPECT_TRUE(table.partitionable);
  EXPECT_EQ(table.gradient_name, "embedding.weight_grad");
  ExpectDenseFloat(item.variables()[1], "fc.weight", {10, 64});
  ExpectDenseFloat(item.variables()[2], "fc.bias", {10});
}

TEST(GraphItemTest, VariablesUnderControlFlowAreNotPartitionable) {
  const GraphItem item = GraphItem::Load(Fixture("control_flow.onnx"));
  // trip_count (int64) and cond (bool) are constants, not variables.
  EXPECT_THAT(Names(item.variables()),
              ElementsAre("dense_w", "loop_w", "loop_table", "alias_w", "nested_w", "state_w"));
  EXPECT_TRUE(Find(item, "dense_w").partitionable);    // MatMul in the main graph
  EXPECT_FALSE(Find(item, "loop_w").partitionable);    // read in the Loop body
  EXPECT_FALSE(Find(item, "alias_w").partitionable);   // its Identity alias is read in the body
  EXPECT_FALSE(Find(item, "nested_w").partitionable);  // read in an If inside the Loop body
  EXPECT_FALSE(Find(item, "state_w").partitionable);   // a direct input of the Loop node
  const Variable& table = Find(item, "loop_table");    // Gather axis 0 inside the body
  EXPECT_FALSE(table.partitionable);
  EXPECT_TRUE(table.sparse);
  for (const Variable& variable : item.variables()) {
    EXPECT_TRUE(variable.trainable) << variable.name;
    EXPECT_EQ(variable.sparse, variable.name == "loop_table") << variable.name;
  }
}

TEST(GraphItemTest, SparseOnlyWhenEveryUseGathersRows) {
  const GraphItem item = GraphItem::Load(Fixture("identity_gather.onnx"));
  EXPECT_THAT(Names(item.variables()),
              ElementsAre("sparse_table", "neg_axis_table", "axis1_table", "mixed_table",
                          "alias_dense_table", "unused_table"));
  EXPECT_TRUE(Find(item, "sparse_table").sparse);        // Gathers through Identity chains only
  EXPECT_TRUE(Find(item, "neg_axis_table").sparse);      // axis -2 of a rank-2 table is axis 0
  EXPECT_FALSE(Find(item, "axis1_table").sparse);        // gathers columns
  EXPECT_FALSE(Find(item, "mixed_table").sparse);        // also read by MatMul
  EXPECT_FALSE(Find(item, "alias_dense_table").sparse);  // its Identity alias feeds MatMul
  EXPECT_FALSE(Find(item, "unused_table").sparse);       // no uses at all
  for (const Variable& variable : item.variables()) {
    EXPECT_TRUE(variable.partitionable) << variable.name;
    EXPECT_TRUE(variable.trainable) << variable.name;
    EXPECT_EQ(variable.bytes, 800 * 4) << variable.name;
  }
}

TEST(GraphItemTest, ModelWithoutFloatInitializersLoads) {
  const GraphItem item = GraphItem::Load(Fixture("no_variables.onnx"));
  EXPECT_THAT(item.variables(), IsEmpty());
  EXPECT_THAT(item.TrainableVariables(), IsEmpty());
  const proto::GraphItem message = item.ToProto(false);
  EXPECT_EQ(message.grad_target_pairs_size(), 0);
  EXPECT_EQ(message.info().variables_size(), 0);
}

TEST(GraphItemTest, FashionMnistExampleModelsLoad) {
  const std::string dir = std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist/";
  const GraphItem mlp = GraphItem::Load(dir + "fmnist_mlp.onnx");
  EXPECT_EQ(Names(mlp.variables()), Names(GraphItem::Load(Fixture("mlp.onnx")).variables()));
  const GraphItem cnn = GraphItem::Load(dir + "fmnist_cnn.onnx");
  EXPECT_THAT(Names(cnn.TrainableVariables()),
              ElementsAre("conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight",
                          "conv2.bias", "bn2.weight", "bn2.bias", "fc1.weight", "fc1.bias",
                          "fc2.weight", "fc2.bias"));
  EXPECT_EQ(Find(cnn, "conv2.weight").shape, (std::vector<int64_t>{64, 32, 3, 3}));
  EXPECT_EQ(Find(cnn, "fc1.weight").shape, (std::vector<int64_t>{128, 3136}));
  EXPECT_FALSE(Find(cnn, "bn2.running_var").trainable);
}

}  // namespace
}  // namespace autodist::graph
