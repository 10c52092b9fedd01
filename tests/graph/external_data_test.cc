// ONNX external data: a model whose initializers live in a data file beside it loads, and every
// bad reference is refused with an error naming the initializer and the file.
#include "runtime/graph/external_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
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

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void SetEntry(onnx::TensorProto& tensor, const std::string& key, const std::string& value) {
  for (auto& entry : *tensor.mutable_external_data()) {
    if (entry.key() == key) {
      entry.set_value(value);
      return;
    }
  }
  auto* entry = tensor.add_external_data();
  entry->set_key(key);
  entry->set_value(value);
}

// y = Gemm(x, w, b) with w [3,4] (48 bytes at offset 0) and b [4] (16 bytes at offset 48) in
// "model.onnx.data" beside "model.onnx", in a fresh directory per test.
class ExternalDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / (std::string("autodist_external_") + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::vector<float> data(16);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5F;
    WriteFileBytes(Path("model.onnx.data"),
                   std::string(reinterpret_cast<const char*>(data.data()), data.size() * 4));

    model_ = NewModel("g");
    onnx::GraphProto* graph = model_.mutable_graph();
    AddNode(graph, "Gemm", {"x", "w", "b"}, {"y"}, "gemm");
    AddInput(graph, "x", {2, 3});
    AddOutput(graph, "y", {2, 4});
    AddExternal("w", {3, 4}, 0, 48);
    AddExternal("b", {4}, 48, 16);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void AddExternal(const std::string& name, const std::vector<int64_t>& dims, int64_t offset,
                   int64_t length) {
    onnx::TensorProto* tensor = AddInitializer(model_.mutable_graph(), name, dims);
    tensor->set_data_location(onnx::TensorProto::EXTERNAL);
    SetEntry(*tensor, "location", "model.onnx.data");
    SetEntry(*tensor, "offset", std::to_string(offset));
    SetEntry(*tensor, "length", std::to_string(length));
  }

  onnx::TensorProto& Initializer(int i) { return *model_.mutable_graph()->mutable_initializer(i); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes the model and loads it as a GraphItem.
  GraphItem Load() {
    WriteFileBytes(Path("model.onnx"), model_.SerializeAsString());
    return GraphItem::Load(Path("model.onnx"));
  }

  Error LoadError() {
    return ErrorOf([&] { Load(); });
  }

  fs::path dir_;
  onnx::ModelProto model_;
};

TEST_F(ExternalDataTest, LoadsAndResolvesEachTensorsRange) {
  const GraphItem item = Load();
  ASSERT_EQ(item.variables().size(), 2U);
  EXPECT_EQ(item.variables()[0].bytes, 48);
  const ExternalDataRange range =
      ResolveExternalData(model_.graph().initializer(1), ModelDirectory(Path("model.onnx")), "b");
  EXPECT_EQ(range.path, Path("model.onnx.data"));
  EXPECT_EQ(range.offset, 48);
  EXPECT_EQ(range.length, 16);
}

TEST_F(ExternalDataTest, LengthDefaultsToTheRestOfTheFile) {
  Initializer(1).mutable_external_data()->RemoveLast();  // drop "length"
  const ExternalDataRange range =
      ResolveExternalData(model_.graph().initializer(1), dir_.string(), "b");
  EXPECT_EQ(range.length, 16);
}

TEST_F(ExternalDataTest, ModelDirectoryOfABareFileNameIsTheCurrentDirectory) {
  EXPECT_EQ(ModelDirectory("model.onnx"), ".");
  EXPECT_EQ(ModelDirectory("/a/b/model.onnx"), "/a/b");
}

TEST_F(ExternalDataTest, MissingDataFileIsNotFoundAndNamesInitializerAndFile) {
  fs::remove(Path("model.onnx.data"));
  const Error error = LoadError();
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_THAT(error.what(), HasSubstr("initializer 'w'"));
  EXPECT_THAT(error.what(), HasSubstr(Path("model.onnx.data")));
  EXPECT_THAT(error.what(), HasSubstr("does not exist"));
}

TEST_F(ExternalDataTest, OffsetBeyondTheFileIsRefused) {
  SetEntry(Initializer(1), "offset", "4096");
  const Error error = LoadError();
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("initializer 'b'"));
  EXPECT_THAT(error.what(), HasSubstr("offset 4096 is beyond the end"));
}

TEST_F(ExternalDataTest, LengthPastTheEndOfTheFileIsRefused) {
  SetEntry(Initializer(1), "offset", "56");
  const Error error = LoadError();
  EXPECT_THAT(error.what(), HasSubstr("16 bytes at offset 56 runs past the end"));
  EXPECT_THAT(error.what(), HasSubstr(Path("model.onnx.data")));
}

TEST_F(ExternalDataTest, LengthThatDisagreesWithTheShapeIsRefused) {
  SetEntry(Initializer(0), "length", "40");
  const Error error = LoadError();
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("initializer 'w'"));
  EXPECT_THAT(error.what(), HasSubstr("is 40 bytes; its dims need 48"));
}

TEST_F(ExternalDataTest, LocationLeavingTheModelsDirectoryIsRefused) {
  SetEntry(Initializer(0), "location", "../model.onnx.data");
  EXPECT_THAT(LoadError().what(), HasSubstr("'../model.onnx.data' leaves the model's directory"));
  SetEntry(Initializer(0), "location", "sub/../../x.data");
  EXPECT_THAT(LoadError().what(), HasSubstr("leaves the model's directory"));
}

TEST_F(ExternalDataTest, AbsoluteLocationIsRefused) {
  SetEntry(Initializer(0), "location", Path("model.onnx.data"));
  EXPECT_THAT(LoadError().what(), HasSubstr("is absolute"));
}

TEST_F(ExternalDataTest, LinkOutOfTheModelsDirectoryIsRefused) {
  const fs::path outside = dir_.string() + "_outside.data";
  fs::copy_file(Path("model.onnx.data"), outside, fs::copy_options::overwrite_existing);
  fs::create_symlink(outside, Path("link.data"));
  SetEntry(Initializer(0), "location", "link.data");
  EXPECT_THAT(LoadError().what(), HasSubstr("'link.data' leaves the model's directory"));
  fs::remove(outside);
}

TEST_F(ExternalDataTest, MalformedEntriesAreRefused) {
  SetEntry(Initializer(0), "offset", "12abc");
  EXPECT_THAT(LoadError().what(), HasSubstr("external data 'offset' is '12abc'"));
  SetEntry(Initializer(0), "offset", "0");
  SetEntry(Initializer(0), "colour", "blue");
  EXPECT_THAT(LoadError().what(), HasSubstr("unknown external data key 'colour'"));
}

TEST_F(ExternalDataTest, MissingLocationIsRefused) {
  Initializer(0).mutable_external_data()->DeleteSubrange(0, 1);
  EXPECT_THAT(LoadError().what(), HasSubstr("external data without a 'location'"));
}

TEST_F(ExternalDataTest, DataFileThatIsADirectoryIsRefused) {
  fs::remove(Path("model.onnx.data"));
  fs::create_directories(Path("model.onnx.data"));
  EXPECT_THAT(LoadError().what(), HasSubstr("is not a regular file"));
}

TEST_F(ExternalDataTest, StrippedModelNeedsNoDataFile) {
  const GraphItem full = Load();
  fs::remove(Path("model.onnx.data"));
  const proto::GraphItem stripped = full.ToProto(/*strip_weights=*/true);
  const GraphItem reloaded = GraphItem::Parse(stripped.SerializeAsString(), "stripped.pb");
  EXPECT_EQ(reloaded.variables().size(), 2U);
}

TEST(ExternalDataFixtureTest, ModelSavedByOnnxLoadsWithTheSameVariablesAsTheInlineOne) {
  const std::string models = std::string(AUTODIST_FIXTURES_DIR) + "/models/";
  const GraphItem inline_item = GraphItem::Load(models + "cnn.onnx");
  const GraphItem external_item = GraphItem::Load(models + "external/cnn.onnx");
  ASSERT_EQ(external_item.variables().size(), inline_item.variables().size());
  for (size_t i = 0; i < inline_item.variables().size(); ++i) {
    EXPECT_EQ(external_item.variables()[i].name, inline_item.variables()[i].name);
    EXPECT_EQ(external_item.variables()[i].bytes, inline_item.variables()[i].bytes);
    EXPECT_EQ(external_item.variables()[i].trainable, inline_item.variables()[i].trainable);
  }
}

}  // namespace
}  // namespace autodist::graph
