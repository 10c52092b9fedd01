// GraphItem rules on models built here with the ONNX protobuf API: gradient-name collisions,
// data types and sizes, initializers listed as inputs, and names shadowed inside subgraphs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/graph/graph_item.h"
#include "tests/onnx_graph_builder.h"

namespace autodist::graph {
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

// A FLOAT initializer filled with zeros.
onnx::TensorProto* AddWeight(onnx::GraphProto* graph, const std::string& name,
                             const std::vector<int64_t>& dims) {
  return AddInitializer(graph, name, dims,
                        std::vector<float>(static_cast<size_t>(ElementCount(dims)), 0.0F));
}

const Variable& Find(const GraphItem& item, const std::string& name) {
  for (const Variable& variable : item.variables()) {
    if (variable.name == name) return variable;
  }
  throw std::runtime_error("no variable " + name);
}

// Adds a graph-valued attribute `name` (an If branch, a Loop body) to `node`.
onnx::GraphProto* AddGraphAttribute(onnx::NodeProto* node, const char* name) {
  onnx::AttributeProto* attribute = node->add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* body = attribute->mutable_g();
  body->set_name(name);
  return body;
}

TEST(GradientNamesTest, TakesTheFirstFreeSuffixWhenTheNameExists) {
  onnx::ModelProto model = NewModel("test");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {2, 2});
  AddWeight(graph, "w", {2, 2});
  AddWeight(graph, "b", {2});
  AddWeight(graph, "c", {2});
  AddNode(graph, "MatMul", {"x", "w"}, {"w_grad"});  // a node output takes w_grad
  AddNode(graph, "Add", {"w_grad", "b"}, {"b_grad_1"});
  AddNode(graph, "Add", {"b_grad_1", "c"}, {"y"});
  SetTensorType(graph->add_value_info(), "b_grad", {2, 2});
  AddOutput(graph, "y", {2, 2});
  AddOutput(graph, "c_grad", {2, 2});  // a graph output takes c_grad
  AddNode(graph, "Identity", {"y"}, {"c_grad"});

  const GraphItem item = GraphItem::FromOnnx(model, "in-test");
  EXPECT_EQ(Find(item, "w").gradient_name, "w_grad_1");
  EXPECT_EQ(Find(item, "b").gradient_name, "b_grad_2");  // b_grad (value_info), b_grad_1 (node)
  EXPECT_EQ(Find(item, "c").gradient_name, "c_grad_1");
  const proto::GraphItem message = item.ToProto(false);
  EXPECT_EQ(message.grad_target_pairs().at("w_grad_1"), "w");
  EXPECT_EQ(message.grad_target_pairs().at("b_grad_2"), "b");
  EXPECT_EQ(message.grad_target_pairs().at("c_grad_1"), "c");
  EXPECT_EQ(message.grad_target_pairs_size(), 3);
}

TEST(GradientNamesTest, InitializerAndSubgraphNamesAreTaken) {
  onnx::ModelProto model = NewModel("test");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {2});
  AddInput(graph, "flag", {}, onnx::TensorProto::BOOL);
  AddWeight(graph, "v", {2});
  AddWeight(graph, "v_grad", {2});  // another variable is called v_grad
  AddWeight(graph, "u", {2});
  AddNode(graph, "Add", {"x", "v"}, {"s"});
  AddNode(graph, "Add", {"s", "v_grad"}, {"t"});
  onnx::NodeProto* branch = AddNode(graph, "If", {"flag"}, {"y"});
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::GraphProto* body = AddGraphAttribute(branch, name);
    const std::string out = std::string(name) + "_out";
    AddNode(body, "Add", {"t", "u"}, {"u_grad"});  // the body takes u_grad
    AddNode(body, "Identity", {"u_grad"}, {out});
    AddOutput(body, out, {2});
  }
  AddOutput(graph, "y", {2});

  const GraphItem item = GraphItem::FromOnnx(model, "in-test");
  EXPECT_EQ(Find(item, "v").gradient_name, "v_grad_1");
  EXPECT_EQ(Find(item, "v_grad").gradient_name, "v_grad_grad");
  EXPECT_EQ(Find(item, "u").gradient_name, "u_grad_1");
  EXPECT_FALSE(Find(item, "u").partitionable);
  EXPECT_TRUE(Find(item, "v").partitionable);
}

TEST(VariableTableTest, FloatTypesGiveBytesAndOtherTypesAreConstants) {
  onnx::ModelProto model = NewModel("test");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {3});
  onnx::TensorProto* half = graph->add_initializer();
  half->set_name("half");
  half->set_data_type(onnx::TensorProto::FLOAT16);
  half->add_dims(3);
  half->set_raw_data(std::string(6, '\0'));
  onnx::TensorProto* wide = graph->add_initializer();
  wide->set_name("wide");
  wide->set_data_type(onnx::TensorProto::DOUBLE);
  wide->add_dims(3);
  for (int i = 0; i < 3; ++i) wide->add_double_data(1.0);
  onnx::TensorProto* scalar = graph->add_initializer();
  scalar->set_name("scalar");
  scalar->set_data_type(onnx::TensorProto::FLOAT);
  scalar->add_float_data(2.0f);
  onnx::TensorProto* ints = graph->add_initializer();
  ints->set_name("ints");
  ints->set_data_type(onnx::TensorProto::INT64);
  ints->add_dims(1);
  ints->add_int64_data(3);
  SetIntAttribute(AddNode(graph, "Cast", {"half"}, {"half_f"}), "to", onnx::TensorProto::FLOAT);
  AddNode(graph, "Mul", {"x", "half_f"}, {"y"});
  AddOutput(graph, "y", {3});

  const GraphItem item = GraphItem::FromOnnx(model, "in-test");
  ASSERT_EQ(item.variables().size(), 3u);  // ints is not a variable
  EXPECT_EQ(Find(item, "half").bytes, 6);
  EXPECT_EQ(Find(item, "half").data_type, onnx::TensorProto::FLOAT16);
  EXPECT_EQ(Find(item, "wide").bytes, 24);
  EXPECT_EQ(Find(item, "scalar").bytes, 4);
  EXPECT_TRUE(Find(item, "scalar").shape.empty());
}

TEST(VariableTableTest, InitializerListedAsGraphInputIsStillTheVariable) {
  // Models of IR version 3 (keep_initializers_as_inputs=True) also list weights as inputs.
  onnx::ModelProto model = NewModel("test");
  model.set_ir_version(3);
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "ids", {4}, onnx::TensorProto::INT64);
  AddInput(graph, "table", {10, 2});
  AddWeight(graph, "table", {10, 2});
  AddNode(graph, "Gather", {"table", "ids"}, {"rows"});
  AddOutput(graph, "rows", {4, 2});

  const GraphItem item = GraphItem::FromOnnx(model, "in-test");
  ASSERT_EQ(item.variables().size(), 1u);
  EXPECT_TRUE(item.variables()[0].sparse);
}

TEST(VariableTableTest, SubgraphNameShadowingAnOuterVariableIsNotAUse) {
  onnx::ModelProto model = NewModel("test");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "ids", {4}, onnx::TensorProto::INT64);
  AddInput(graph, "flag", {}, onnx::TensorProto::BOOL);
  AddWeight(graph, "table", {10, 2});
  AddNode(graph, "Gather", {"table", "ids"}, {"rows"});
  onnx::NodeProto* branch = AddNode(graph, "If", {"flag"}, {"y"});
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::GraphProto* body = AddGraphAttribute(branch, name);
    AddWeight(body, "table", {4, 2});  // the body's own constant named like the outer variable
    const std::string out = std::string(name) + "_out";
    AddNode(body, "Add", {"rows", "table"}, {out});
    AddOutput(body, out, {4, 2});
  }
  AddOutput(graph, "y", {4, 2});

  const GraphItem item = GraphItem::FromOnnx(model, "in-test");
  ASSERT_EQ(item.variables().size(), 1u);  // only main-graph initializers are variables
  EXPECT_TRUE(item.variables()[0].sparse);
  EXPECT_TRUE(item.variables()[0].partitionable);
}

TEST(VariableTableTest, DataThatDoesNotMatchDimsIsRejected) {
  onnx::ModelProto model = NewModel("test");
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {4});
  AddWeight(graph, "w", {4})->add_float_data(1.0f);  // 5 values for 4 elements
  AddNode(graph, "Add", {"x", "w"}, {"y"});
  AddOutput(graph, "y", {4});
  try {
    GraphItem::FromOnnx(model, "short.onnx");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("short.onnx"));
    EXPECT_THAT(e.what(), HasSubstr("'w'"));
    EXPECT_THAT(e.what(), HasSubstr("4 elements"));
  }
}

}  // namespace
}  // namespace autodist::graph
