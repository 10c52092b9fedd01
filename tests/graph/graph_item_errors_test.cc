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

namespace autodist::graph {
namespace {

using autodist::testing::ErrorOf;

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
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("narrow");
  const auto declare = [](onnx::ValueInfoProto* value, const std::string& name,
                          std::vector<int64_t> dims) {
    value->set_name(name);
    onnx::TypeProto_Tensor* type = value->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (const int64_t dim : dims) {
      if (dim < 0) {
        type->mutable_shape()->add_dim()->set_dim_param("batch");
      } else {
        type->mutable_shape()->add_dim()->set_dim_value(dim);
      }
    }
  };
  declare(graph->add_input(), "x", {-1, 4});
  declare(graph->add_output(), "y", {-1, 3});
  onnx::TensorProto* weight = graph->add_initializer();
  weight->set_name("proj.weight");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(5);  // x has 4 features, not 5
  weight->add_dims(3);
  weight->set_raw_data(std::string(5 * 3 * sizeof(float), '\0'));
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type("MatMul");
  node->set_name("proj");
  node->add_input("x");
  node->add_input("proj.weight");
  node->add_output("y");
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
