// Wire compatibility with AutoDist: tests/fixtures/wire/*.pb were written by a hand-made protobuf
// encoder from AutoDist's field numbers (tests/fixtures/generate.py), independent of our .proto
// files. Decoding them with our generated classes must give every value back, and our text/JSON
// field names must be AutoDist's.
#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

#include "proto/graphitem.pb.h"
#include "proto/strategy.pb.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"

namespace autodist {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string WirePath(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/wire/" + name;
}

proto::Strategy LoadStrategy() {
  proto::Strategy strategy;
  EXPECT_TRUE(strategy.ParseFromString(ReadFileBytes(WirePath("autodist_strategy.pb"), "wire")));
  return strategy;
}

TEST(WireCompatTest, StrategyDecodesEveryField) {
  const proto::Strategy strategy = LoadStrategy();
  EXPECT_EQ(strategy.id(), "strategy-20240101-wire");
  EXPECT_EQ(strategy.path(), "/tmp/autodist/strategies/wire");
  ASSERT_EQ(strategy.node_config_size(), 3);

  const proto::Strategy::Node& ps = strategy.node_config(0);
  EXPECT_EQ(ps.var_name(), "fc1.weight");
  ASSERT_TRUE(ps.has_pssynchronizer());
  EXPECT_EQ(ps.pssynchronizer().reduction_destination(), "10.0.0.1:CPU:0");
  EXPECT_TRUE(ps.pssynchronizer().local_replication());
  EXPECT_TRUE(ps.pssynchronizer().sync());
  EXPECT_EQ(ps.pssynchronizer().staleness(), 3);
  EXPECT_EQ(ps.partitioner(), "");
  EXPECT_EQ(ps.part_config_size(), 0);

  const proto::Strategy::Node& ar = strategy.node_config(1);
  EXPECT_EQ(ar.var_name(), "fc1.bias");
  ASSERT_TRUE(ar.has_allreducesynchronizer());
  EXPECT_EQ(ar.allreducesynchronizer().spec(), proto::AllReduceSynchronizer::RING);
  EXPECT_EQ(ar.allreducesynchronizer().compressor(),
            proto::AllReduceSynchronizer::HorovodCompressorEF);
  EXPECT_EQ(ar.allreducesynchronizer().group(), 7);

  const proto::Strategy::Node& partitioned = strategy.node_config(2);
  EXPECT_EQ(partitioned.var_name(), "embedding.weight");
  EXPECT_EQ(partitioned.synchronizer_case(), proto::Strategy::Node::SYNCHRONIZER_NOT_SET);
  EXPECT_EQ(partitioned.partitioner(), "2,1");
  ASSERT_EQ(partitioned.part_config_size(), 2);
  const char* destinations[] = {"10.0.0.1:CPU:0", "10.0.0.2:CPU:0"};
  for (int i = 0; i < 2; ++i) {
    const proto::Strategy::Node& part = partitioned.part_config(i);
    EXPECT_EQ(part.var_name(), "embedding.weight/part_" + std::to_string(i));
    ASSERT_TRUE(part.has_pssynchronizer());
    EXPECT_EQ(part.pssynchronizer().reduction_destination(), destinations[i]);
    EXPECT_TRUE(part.pssynchronizer().sync());
    EXPECT_FALSE(part.pssynchronizer().local_replication());
    EXPECT_EQ(part.pssynchronizer().staleness(), 0);
  }
  EXPECT_THAT(strategy.graph_config().replicas(), ElementsAre("10.0.0.1:GPU:0", "10.0.0.2:GPU:0"));
}

TEST(WireCompatTest, StrategyReencodesToTheSameBytes) {
  // Both writers emit fields in field-number order, so equal bytes mean equal numbers and types.
  EXPECT_EQ(LoadStrategy().SerializeAsString(),
            ReadFileBytes(WirePath("autodist_strategy.pb"), "wire"));
}

TEST(WireCompatTest, TextFormatUsesAutoDistFieldNames) {
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(LoadStrategy(), &text));
  for (const char* expected :
       {"id: \"strategy-20240101-wire\"", "path: ", "node_config {", "var_name: \"fc1.weight\"",
        "PSSynchronizer {", "reduction_destination: \"10.0.0.1:CPU:0\"", "local_replication: true",
        "sync: true", "staleness: 3", "AllReduceSynchronizer {", "spec: RING",
        "compressor: HorovodCompressorEF", "group: 7", "partitioner: \"2,1\"", "part_config {",
        "graph_config {", "replicas: \"10.0.0.1:GPU:0\""}) {
    EXPECT_THAT(text, HasSubstr(expected));
  }
}

TEST(WireCompatTest, JsonUsesAutoDistFieldNames) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  ASSERT_TRUE(google::protobuf::util::MessageToJsonString(LoadStrategy(), &json, options).ok());
  for (const char* expected :
       {"\"id\":\"strategy-20240101-wire\"", "\"node_config\":[", "\"var_name\":\"fc1.weight\"",
        "\"PSSynchronizer\":{", "\"reduction_destination\":\"10.0.0.1:CPU:0\"",
        "\"local_replication\":true", "\"sync\":true", "\"staleness\":3",
        "\"AllReduceSynchronizer\":{", "\"spec\":\"RING\"",
        "\"compressor\":\"HorovodCompressorEF\"", "\"group\":7", "\"partitioner\":\"2,1\"",
        "\"part_config\":[", "\"graph_config\":{", "\"replicas\":[\"10.0.0.1:GPU:0\""}) {
    EXPECT_THAT(json, HasSubstr(expected));
  }
}

TEST(WireCompatTest, GraphItemDecodesEveryField) {
  proto::GraphItem item;
  ASSERT_TRUE(item.ParseFromString(ReadFileBytes(WirePath("autodist_graphitem.pb"), "wire")));
  EXPECT_EQ(item.graph_def().type_url(), "type.googleapis.com/onnx.ModelProto");
  onnx::ModelProto model;
  ASSERT_TRUE(item.graph_def().UnpackTo(&model));
  EXPECT_EQ(model.graph().name(), "wire_graph");
  EXPECT_EQ(model.graph().initializer_size(), 3);

  const std::map<std::string, std::string> pairs(item.grad_target_pairs().begin(),
                                                 item.grad_target_pairs().end());
  EXPECT_EQ(pairs, (std::map<std::string, std::string>{
                       {"table_grad", "table"}, {"w_grad", "w"}, {"b_grad", "b"}}));

  ASSERT_EQ(item.info().variables_size(), 3);
  struct Expected {
    const char* name;
    std::vector<int64_t> shape;
    int64_t bytes;
    bool sparse;
  };
  const Expected expected[] = {
      {"table", {5, 3}, 60, true}, {"w", {3, 2}, 24, false}, {"b", {2}, 8, false}};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(item.info().variables(i).type_url(),
              "type.googleapis.com/autodist.proto.VariableInfo");
    proto::VariableInfo info;
    ASSERT_TRUE(item.info().variables(i).UnpackTo(&info));
    EXPECT_EQ(info.name(), expected[i].name);
    EXPECT_EQ(std::vector<int64_t>(info.shape().begin(), info.shape().end()), expected[i].shape);
    EXPECT_EQ(info.data_type(), 1);
    EXPECT_EQ(info.bytes(), expected[i].bytes);
    EXPECT_EQ(info.sparse(), expected[i].sparse);
    EXPECT_TRUE(info.partitionable());
    EXPECT_TRUE(info.trainable());
    EXPECT_EQ(info.gradient_name(), std::string(expected[i].name) + "_grad");
  }
  EXPECT_THAT(item.info().table_initializers(), ElementsAre("init_table_a", "init_table_b"));
  ASSERT_EQ(item.info().savers_size(), 1);
  EXPECT_EQ(item.info().savers(0).type_url(), "type.googleapis.com/autodist.test.Saver");
  EXPECT_EQ(item.info().savers(0).value(), "saver-0");
}

TEST(WireCompatTest, GraphItemLoadsAndDerivesTheSameTable) {
  proto::GraphItem item;
  ASSERT_TRUE(item.ParseFromString(ReadFileBytes(WirePath("autodist_graphitem.pb"), "wire")));
  const graph::GraphItem loaded = graph::GraphItem::Load(WirePath("autodist_graphitem.pb"));
  ASSERT_EQ(static_cast<int>(loaded.variables().size()), item.info().variables_size());
  for (int i = 0; i < item.info().variables_size(); ++i) {
    proto::VariableInfo info;
    ASSERT_TRUE(item.info().variables(i).UnpackTo(&info));
    const graph::Variable& variable = loaded.variables()[i];
    SCOPED_TRACE(variable.name);
    EXPECT_EQ(variable.name, info.name());
    EXPECT_EQ(variable.shape, std::vector<int64_t>(info.shape().begin(), info.shape().end()));
    EXPECT_EQ(variable.bytes, info.bytes());
    EXPECT_EQ(variable.sparse, info.sparse());
    EXPECT_EQ(variable.gradient_name, info.gradient_name());
  }
}

}  // namespace
}  // namespace autodist
