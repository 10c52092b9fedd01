// ToProto(strip_weights=true): structure without data, small enough for a ConfigMap, and loading
// it again gives the same variable table as the full model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"

namespace autodist::graph {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/models/" + name;
}

// Every field of a variable, one line each, so table mismatches print readably.
std::vector<std::string> Table(const GraphItem& item) {
  std::vector<std::string> rows;
  for (const Variable& v : item.variables()) {
    std::string shape;
    for (const int64_t dim : v.shape) shape += std::to_string(dim) + ",";
    rows.push_back(v.name + " [" + shape + "] type=" + std::to_string(v.data_type) +
                   " bytes=" + std::to_string(v.bytes) + " sparse=" + std::to_string(v.sparse) +
                   " partitionable=" + std::to_string(v.partitionable) +
                   " trainable=" + std::to_string(v.trainable) + " grad=" + v.gradient_name);
  }
  return rows;
}

std::map<std::string, std::string> Pairs(const proto::GraphItem& item) {
  return {item.grad_target_pairs().begin(), item.grad_target_pairs().end()};
}

onnx::ModelProto Model(const proto::GraphItem& item) {
  onnx::ModelProto model;
  EXPECT_TRUE(item.graph_def().UnpackTo(&model));
  return model;
}

class StripWeightsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StripWeightsTest, StrippedGraphItemGivesTheSameVariableTable) {
  const GraphItem full = GraphItem::Load(Fixture(GetParam()));
  const proto::GraphItem stripped = full.ToProto(/*strip_weights=*/true);
  const GraphItem reloaded = GraphItem::Parse(stripped.SerializeAsString(), "stripped.pb");
  EXPECT_EQ(Table(reloaded), Table(full));
  EXPECT_EQ(Pairs(reloaded.ToProto(false)), Pairs(full.ToProto(false)));
  EXPECT_EQ(Pairs(stripped), Pairs(full.ToProto(false)));
  EXPECT_EQ(reloaded.source(), "stripped.pb");
}

TEST_P(StripWeightsTest, StrippedModelKeepsInitializerMetadataButNoData) {
  const onnx::ModelProto original =
      Model(GraphItem::Load(Fixture(GetParam())).ToProto(/*strip_weights=*/false));
  const onnx::ModelProto model =
      Model(GraphItem::Load(Fixture(GetParam())).ToProto(/*strip_weights=*/true));
  ASSERT_EQ(model.graph().initializer_size(), original.graph().initializer_size());
  for (int i = 0; i < model.graph().initializer_size(); ++i) {
    const onnx::TensorProto& tensor = model.graph().initializer(i);
    const onnx::TensorProto& before = original.graph().initializer(i);
    SCOPED_TRACE(tensor.name());
    EXPECT_EQ(tensor.name(), before.name());
    EXPECT_EQ(tensor.data_type(), before.data_type());
    EXPECT_EQ(std::vector<int64_t>(tensor.dims().begin(), tensor.dims().end()),
              std::vector<int64_t>(before.dims().begin(), before.dims().end()));
    EXPECT_TRUE(tensor.raw_data().empty());
    EXPECT_EQ(tensor.float_data_size() + tensor.int32_data_size() + tensor.int64_data_size() +
                  tensor.double_data_size() + tensor.uint64_data_size() +
                  tensor.string_data_size() + tensor.external_data_size(),
              0);
  }
  int markers = 0;
  for (const onnx::StringStringEntryProto& entry : model.metadata_props()) {
    if (entry.key() == kWeightsStrippedKey) {
      ++markers;
      EXPECT_EQ(entry.value(), "true");
    }
  }
  EXPECT_EQ(markers, 1);
  EXPECT_EQ(model.graph().node_size(), original.graph().node_size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StripWeightsTest,
                         ::testing::Values("mlp.onnx", "cnn.onnx", "embedding.onnx",
                                           "control_flow.onnx", "identity_gather.onnx",
                                           "no_variables.onnx"),
                         [](const auto& param_info) {
                           return param_info.param.substr(0, param_info.param.find('.'));
                         });

TEST(StripWeightsSizeTest, LargeModelShrinksToItsStructure) {
  const GraphItem item = GraphItem::Load(Fixture("mlp.onnx"));
  const size_t full = item.ToProto(false).ByteSizeLong();
  const size_t stripped = item.ToProto(true).ByteSizeLong();
  EXPECT_GT(full, 900u * 1000u);  // 235,146 float weights
  EXPECT_LT(stripped, 8u * 1024u) << "full: " << full;
  EXPECT_LT(stripped * 100, full);
}

TEST(StripWeightsSizeTest, StrippingAStrippedItemChangesNothing) {
  const GraphItem item = GraphItem::Load(Fixture("cnn.onnx"));
  const proto::GraphItem once = item.ToProto(true);
  const GraphItem reloaded = GraphItem::Parse(once.SerializeAsString(), "once.pb");
  const proto::GraphItem twice = reloaded.ToProto(true);
  EXPECT_EQ(Model(twice).SerializeAsString(), Model(once).SerializeAsString());
  EXPECT_EQ(Model(reloaded.ToProto(false)).SerializeAsString(), Model(once).SerializeAsString());
}

TEST(StripWeightsSizeTest, FullGraphItemRoundTripsThroughAFile) {
  const GraphItem item = GraphItem::Load(Fixture("embedding.onnx"));
  const std::string path = ::testing::TempDir() + "/graph_item_full.pb";
  WriteFileBytes(path, item.ToProto(false).SerializeAsString());
  const GraphItem reloaded = GraphItem::Load(path);
  EXPECT_EQ(Table(reloaded), Table(item));
  EXPECT_EQ(Model(reloaded.ToProto(false)).SerializeAsString(),
            Model(item.ToProto(false)).SerializeAsString());
}

}  // namespace
}  // namespace autodist::graph
