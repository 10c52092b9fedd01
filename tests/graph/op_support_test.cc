// The model preflight: every node against the kernel catalogue of the backend that runs it, on
// the committed models (a PyTorch LSTM export among them) and on hand-made node lists.
#include "runtime/graph/op_support.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/graph/graph_item.h"

namespace autodist::graph {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Fixture(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/models/" + name;
}

std::vector<std::string> OpTypes(const std::vector<UnsupportedOp>& unsupported) {
  std::vector<std::string> types;
  for (const UnsupportedOp& op : unsupported) types.push_back(op.op_type);
  return types;
}

std::string ErrorOf(const ModelOps& ops, Backend backend, const std::string& source) {
  try {
    CheckOpsSupported(ops, backend, source);
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    return error.what();
  }
  return "";
}

ModelOps Nodes(std::vector<ModelOps::Node> nodes, int64_t opset = 14) {
  ModelOps ops;
  ops.nodes = std::move(nodes);
  ops.opsets[""] = opset;
  return ops;
}

TEST(OpSupportTest, ExampleModelsRunOnTheCpu) {
  for (const char* name : {"mlp.onnx", "cnn.onnx", "embedding.onnx"}) {
    SCOPED_TRACE(name);
    const GraphItem item = GraphItem::Load(Fixture(name));
    EXPECT_FALSE(item.ops().nodes.empty());
    EXPECT_THAT(FindUnsupportedOps(item.ops(), Backend::kCpu), IsEmpty());
    EXPECT_NO_THROW(CheckOpsSupported(item.ops(), Backend::kCpu, name));
  }
}

// Every op of the CPU engine has a CUDA kernel (the catalogue's two tables are the same): the
// fixtures run on both, and the LSTM export's ops are named for cuda as for the CPU.
TEST(OpSupportTest, CudaRunsEveryFixtureTheCpuRunsAndNamesTheLstmsOps) {
  for (const char* model : {"mlp.onnx", "cnn.onnx", "embedding.onnx"}) {
    EXPECT_THAT(FindUnsupportedOps(GraphItem::Load(Fixture(model)).ops(), Backend::kCuda),
                IsEmpty())
        << model;
  }
  const GraphItem lstm = GraphItem::Load(Fixture("lstm.onnx"));
  EXPECT_EQ(OpTypes(FindUnsupportedOps(lstm.ops(), Backend::kCuda)),
            OpTypes(FindUnsupportedOps(lstm.ops(), Backend::kCpu)));
  EXPECT_THAT(ErrorOf(lstm.ops(), Backend::kCuda, "lstm.onnx"),
              HasSubstr("model 'lstm.onnx' has ops the cuda backend has no kernel for: "));
}

TEST(OpSupportTest, LstmExportNamesEveryUnsupportedOpType) {
  // PyTorch's export of nn.LSTM: the LSTM node, and ConstantOfShape for its zero initial state.
  const GraphItem item = GraphItem::Load(Fixture("lstm.onnx"));
  const std::vector<UnsupportedOp> unsupported = FindUnsupportedOps(item.ops(), Backend::kCpu);
  const std::vector<std::string> types = OpTypes(unsupported);
  EXPECT_THAT(types, ::testing::Contains("LSTM"));
  EXPECT_THAT(types, ::testing::Contains("ConstantOfShape"));
  const std::string message = ErrorOf(item.ops(), Backend::kCpu, "lstm.onnx");
  EXPECT_THAT(message, HasSubstr("model 'lstm.onnx' has ops the cpu backend has no kernel for: "));
  for (const UnsupportedOp& op : unsupported) {
    SCOPED_TRACE(op.op_type);
    EXPECT_EQ(op.opset, 14);
    EXPECT_FALSE(op.nodes.empty());
    EXPECT_THAT(message, HasSubstr(op.op_type + " (opset 14: node"));
    EXPECT_THAT(message, HasSubstr("'" + op.nodes.front() + "'"));
  }
  EXPECT_THAT(message, HasSubstr("docs/training.md lists the ops each backend runs"));
}

TEST(OpSupportTest, OpsetsOutsideAKernelsRangeAreUnsupported) {
  // The CPU's Gemm serves opsets 11..17.
  EXPECT_THAT(FindUnsupportedOps(Nodes({{"Gemm", "", "fc"}}, 11), Backend::kCpu), IsEmpty());
  const std::vector<UnsupportedOp> old =
      FindUnsupportedOps(Nodes({{"Gemm", "", "fc"}}, 9), Backend::kCpu);
  ASSERT_EQ(old.size(), 1U);
  EXPECT_TRUE(old[0].other_opsets);
  EXPECT_EQ(ErrorOf(Nodes({{"Gemm", "", "fc"}}, 9), Backend::kCpu, "m.onnx"),
            "model 'm.onnx' has an op the cpu backend has no kernel for: Gemm (opset 9, "
            "supported only in other opsets: node 'fc'); docs/training.md lists the ops each "
            "backend runs");
}

TEST(OpSupportTest, GroupsNodesByTypeAndDomainAndNamesTheNameless) {
  ModelOps ops = Nodes({{"Relu", "", "r"},
                        {"LSTM", "", "lstm_a"},
                        {"Expand", "", ""},
                        {"LSTM", "", "lstm_b"},
                        {"Relu", "com.example", "custom_relu"}});
  ops.opsets["com.example"] = 1;
  const std::vector<UnsupportedOp> unsupported = FindUnsupportedOps(ops, Backend::kCpu);
  ASSERT_EQ(unsupported.size(), 3U);
  // Sorted by domain, then op type; a node without a name is named by its index.
  EXPECT_EQ(unsupported[0].op_type, "Expand");
  EXPECT_THAT(unsupported[0].nodes, ElementsAre("#2"));
  EXPECT_EQ(unsupported[1].op_type, "LSTM");
  EXPECT_THAT(unsupported[1].nodes, ElementsAre("lstm_a", "lstm_b"));
  EXPECT_FALSE(unsupported[1].other_opsets);
  // Our Relu kernel serves the default domain, not another domain's op of the same name.
  EXPECT_EQ(unsupported[2].domain, "com.example");
  EXPECT_EQ(unsupported[2].opset, 1);
  EXPECT_EQ(ErrorOf(ops, Backend::kCpu, "m.onnx"),
            "model 'm.onnx' has ops the cpu backend has no kernel for: Expand (opset 14: node "
            "'#2'), LSTM (opset 14: nodes 'lstm_a', 'lstm_b'), com.example.Relu (opset 1: node "
            "'custom_relu'); docs/training.md lists the ops each backend runs");
}

TEST(OpSupportTest, ManyNodesOfOneTypeAreCounted) {
  std::vector<ModelOps::Node> nodes;
  for (int i = 0; i < 8; ++i) nodes.push_back({"Expand", "", "e" + std::to_string(i)});
  EXPECT_THAT(ErrorOf(Nodes(nodes), Backend::kCpu, "m.onnx"),
              HasSubstr("Expand (opset 14: nodes 'e0', 'e1', 'e2', 'e3', 'e4' and 3 more)"));
}

TEST(OpSupportTest, OpsOfReadsTheDefaultDomainUnderBothNames) {
  // Models may spell the default domain "ai.onnx"; the kernels serve it all the same.
  ModelOps ops = Nodes({{"Relu", "", "r"}});
  ops.opsets.clear();
  EXPECT_THAT(OpTypes(FindUnsupportedOps(ops, Backend::kCpu)), ElementsAre("Relu"))
      << "a model importing no default opset has no opset our kernels serve";
  const GraphItem item = GraphItem::Load(Fixture("mlp.onnx"));
  EXPECT_EQ(item.ops().opsets.at(""), 14);
}

TEST(OpSupportTest, AGraphItemKeepsItsOpsThroughStrippingAndParsing) {
  const GraphItem item = GraphItem::Load(Fixture("cnn.onnx"));
  std::string bytes;
  item.ToProto(/*strip_weights=*/true).SerializeToString(&bytes);
  const GraphItem parsed = GraphItem::Parse(bytes, "cnn.graphitem");
  EXPECT_EQ(parsed.ops(), item.ops());
}

TEST(OpSupportTest, ControlFlowIsUnsupportedEverywhere) {
  const GraphItem item = GraphItem::Load(Fixture("control_flow.onnx"));
  for (const Backend backend : {Backend::kCpu, Backend::kCuda}) {
    SCOPED_TRACE(std::string(BackendName(backend)));
    EXPECT_THAT(OpTypes(FindUnsupportedOps(item.ops(), backend)), ::testing::Contains("Loop"));
  }
}

}  // namespace
}  // namespace autodist::graph
