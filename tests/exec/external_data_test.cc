// Models with ONNX external data: one saved by onnx.save_model trains exactly as its inline twin,
// and exports write external data that we, and ONNX's own Python loader where installed, read
// back.
#include "runtime/graph/external_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/common/file_io.h"
#include "runtime/exec/trainer.h"
#include "runtime/graph/graph_item.h"
#include "tests/exec/trainer_test_util.h"

namespace autodist::exec {
namespace {

namespace fs = std::filesystem;

const std::string kModels = std::string(AUTODIST_FIXTURES_DIR) + "/models/";

// The CNN fixture on the parity CNN's data (same inputs), SGD, 4 steps, no evaluation.
TrainerOptions CnnOptions(const std::string& model) {
  TrainerOptions options = testing::MlpOptions();
  options.model = model;
  options.train_files = {{"image", testing::kParity + "cnn/image.npy"},
                         {"label", testing::kParity + "cnn/label.npy"}};
  options.eval_files.clear();
  options.steps = 4;
  return options;
}

onnx::ModelProto ReadModel(const std::string& path) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFileBytes(path, "model")));
  return model;
}

// Every initializer's bytes, read through the same path training uses.
std::map<std::string, std::string> InitializerBytes(const std::string& path) {
  const onnx::ModelProto model = ReadModel(path);
  std::map<std::string, std::string> out;
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    if (graph::IsExternalData(t)) {
      const auto range = graph::ResolveExternalData(t, graph::ModelDirectory(path), t.name());
      std::string bytes(static_cast<size_t>(range.length), '\0');
      ReadFileRange(range.path, range.offset, bytes.data(), bytes.size(), t.name());
      out[t.name()] = bytes;
    } else {
      out[t.name()] = t.raw_data();
    }
  }
  return out;
}

class ExternalDataTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / (std::string("external_") + info->name())).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ExternalDataTrainingTest, OnnxSavedExternalModelTrainsLikeItsInlineTwin) {
  TrainerOptions inline_run = CnnOptions(kModels + "cnn.onnx");
  inline_run.export_path = dir_ + "/inline.onnx";
  TrainerOptions external_run = CnnOptions(kModels + "external/cnn.onnx");
  external_run.export_path = dir_ + "/external.onnx";
  const TrainResult a = Train(inline_run, [](const std::string&) {});
  const TrainResult b = Train(external_run, [](const std::string&) {});
  EXPECT_EQ(a.last_loss, b.last_loss);
  // Both exports are inline (small), with the same trained bytes.
  EXPECT_EQ(InitializerBytes(inline_run.export_path), InitializerBytes(external_run.export_path));
  EXPECT_FALSE(fs::exists(external_run.export_path + ".data"));
}

TEST_F(ExternalDataTrainingTest, ExportWritesAlignedExternalDataThatTrainsOn) {
  TrainerOptions options = CnnOptions(kModels + "external/cnn.onnx");
  options.export_path = dir_ + "/trained.onnx";
  options.export_options.external_data = true;
  Train(options, [](const std::string&) {});
  ASSERT_TRUE(fs::exists(dir_ + "/trained.onnx.data"));

  const onnx::ModelProto model = ReadModel(options.export_path);
  int external = 0;
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    if (!graph::IsExternalData(t)) {
      EXPECT_LT(t.raw_data().size(), 1024U) << t.name();
      continue;
    }
    ++external;
    const auto range = graph::ResolveExternalData(t, dir_, t.name());
    EXPECT_EQ(range.location, "trained.onnx.data");
    EXPECT_EQ(range.offset % 4096, 0) << t.name();
  }
  EXPECT_GE(external, 2);  // conv2.weight and fc.weight

  // Trained on from the export, with the checker and every check of a loaded model.
  const graph::GraphItem item = graph::GraphItem::Load(options.export_path);
  EXPECT_EQ(item.variables().size(), 14U);
  TrainerOptions again = CnnOptions(options.export_path);
  again.steps = 1;
  EXPECT_NO_THROW(Train(again, [](const std::string&) {}));

  // The same trained values as an inline export of the same run.
  TrainerOptions inline_run = CnnOptions(kModels + "external/cnn.onnx");
  inline_run.export_path = dir_ + "/inline.onnx";
  Train(inline_run, [](const std::string&) {});
  EXPECT_EQ(InitializerBytes(options.export_path), InitializerBytes(inline_run.export_path));
}

TEST_F(ExternalDataTrainingTest, ExportGoesExternalPastTheThreshold) {
  TrainerOptions options = CnnOptions(kModels + "cnn.onnx");
  options.steps = 1;
  options.export_path = dir_ + "/big.onnx";
  options.export_options.external_threshold_bytes = 4096;  // the CNN is ~36 KB
  Train(options, [](const std::string&) {});
  EXPECT_TRUE(fs::exists(dir_ + "/big.onnx.data"));
  options.export_path = dir_ + "/small.onnx";
  options.export_options.external_threshold_bytes = 1 << 20;
  Train(options, [](const std::string&) {});
  EXPECT_FALSE(fs::exists(dir_ + "/small.onnx.data"));
}

// ONNX's own loader and checker accept the export (Debian's python3-onnx; skipped without it).
TEST_F(ExternalDataTrainingTest, OnnxPythonLoadsTheExport) {
  if (std::system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3-onnx is not installed";
  }
  TrainerOptions options = CnnOptions(kModels + "cnn.onnx");
  options.steps = 1;
  options.export_path = dir_ + "/trained.onnx";
  options.export_options.external_data = true;
  Train(options, [](const std::string&) {});
  const std::string script =
      "import onnx, sys; m = onnx.load(sys.argv[1]); onnx.checker.check_model(sys.argv[1]); "
      "assert sum(len(t.raw_data) for t in m.graph.initializer) > 30000";
  const std::string command = "/usr/bin/python3 -c \"" + script + "\" " + options.export_path;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace autodist::exec
