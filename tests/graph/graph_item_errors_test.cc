// GraphItem on inputs it must reject: each error has the right code and names the file and what
// was expected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"
#include "tests/error_of.h"
#include "tests/onnx_graph_builder.h"

namespace autodist::graph {
namespace {

using autodist::testing::AddInitializer;
using autodist::testing::AddInput;
using autodist::testing::AddNode;
using autodist::testing::AddOutput;
using autodist::testing::ErrorOf;
using autodist::testing::NewModel;

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/models/" + name;
}

TEST(GraphItemErrorsTest, MissingFileIsNotFoundAndNamesThePath) {
  const std::string path = Fixture("does_not_exist.onnx");
  const Error error = ErrorOf([&] { GraphItem::Load(path); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_THAT(error.what(), HasSubstr(path));
}

TEST(GraphItemErrorsTest, TextFileIsNeitherModelNorGraphItem) {
  const std::string path = Fixture("not_onnx.onnx");
  const Error error = ErrorOf([&] { GraphItem::Load(path); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("'" + path + "' is neither an ONNX model nor a GraphItem"));
}

TEST(GraphItemErrorsTest, EmptyFileIsRejected) {
  const std::string path = ::testing::TempDir() + "/graph_item_empty.onnx";
  WriteFileBytes(path, "");
  const Error error = ErrorOf([&] { GraphItem::Load(path); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(path));
  EXPECT_THAT(error.what(), HasSubstr("is empty"));
}

TEST(GraphItemErrorsTest, CheckerFailureNamesCheckerAndFile) {
  const std::string path = Fixture("bad_checker.onnx");
  const Error error = ErrorOf([&] { GraphItem::Load(path); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("model '" + path + "' fails the ONNX checker"));
  EXPECT_THAT(error.what(), HasSubstr("undefined_tensor"));  // the checker's own reason
}

TEST(GraphItemErrorsTest, OpsetNewerThan17IsRejected) {
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(ReadFileBytes(Fixture("mlp.onnx"), "model")));
  for (onnx::OperatorSetIdProto& opset : *model.mutable_opset_import()) {
    if (opset.domain().empty()) opset.set_version(18);
  }
  const Error error = ErrorOf([&] { GraphItem::Parse(model.SerializeAsString(), "new.onnx"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("'new.onnx'"));
  EXPECT_THAT(error.what(), HasSubstr("opset 18"));
  EXPECT_THAT(error.what(), HasSubstr("17"));
}

TEST(GraphItemErrorsTest, StrippedInitializersWithoutTheMarkerFailTheChecker) {
  // Only a model marked as weight-stripped may lack initializer data.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(ReadFileBytes(Fixture("mlp.onnx"), "model")));
  model.mutable_graph()->mutable_initializer(0)->clear_raw_data();
  const Error error = ErrorOf([&] { GraphItem::FromOnnx(model, "unmarked.onnx"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("model 'unmarked.onnx' fails the ONNX checker"));
  EXPECT_THAT(error.what(), HasSubstr("fc1.weight"));
}

// A weight whose shape cannot meet its input passes the checker (which looks at nodes, names and
// types) but not shape inference, which names the op and node at load time.
TEST(GraphItemErrorsTest, ShapesThatDoNotFitFailShapeInferenceNamingTheNode) {
  onnx::ModelProto model = NewModel("narrow", 17);
  onnx::GraphProto* graph = model.mutable_graph();
  AddInput(graph, "x", {-1, 4});
  AddOutput(graph, "y", {-1, 3});
  AddInitializer(graph, "proj.weight", {5, 3})  // x has 4 features, not 5
      ->set_raw_data(std::string(sizeof(float) * 5 * 3, '\0'));
  AddNode(graph, "MatMul", {"x", "proj.weight"}, {"y"}, "proj");
  const Error error = ErrorOf([&] { GraphItem::FromOnnx(model, "narrow.onnx"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("model 'narrow.onnx' fails ONNX shape inference"));
  EXPECT_THAT(error.what(), HasSubstr("MatMul"));
  EXPECT_THAT(error.what(), HasSubstr("proj"));
  EXPECT_THAT(std::string(error.what()), ::testing::Not(HasSubstr("\n")));
}

TEST(GraphItemErrorsTest, GraphItemWithCorruptModelIsRejected) {
  proto::GraphItem item;
  item.mutable_graph_def()->set_type_url("type.googleapis.com/onnx.ModelProto");
  item.mutable_graph_def()->set_value("\xff\xff\xff");
  const Error error = ErrorOf([&] { GraphItem::Parse(item.SerializeAsString(), "item.pb"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("GraphItem 'item.pb'"));
  EXPECT_THAT(error.what(), HasSubstr("onnx.ModelProto"));
}

}  // namespace
}  // namespace autodist::graph
