// Resuming from a directory of checkpoints: torn and corrupt ones are passed over with a warning
// and the run continues bit-identically from the one restored; a checkpoint of another model is
// an error, not skipped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/trainer.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/error_of.h"
#include "tests/exec/trainer_test_util.h"

namespace autodist::exec {
namespace {

using autodist::testing::ErrorOf;
using checkpoint::testing::FlipByte;

namespace fs = std::filesystem;
using checkpoint::CheckpointReader;
using checkpoint::ListCheckpoints;
using ::testing::HasSubstr;

class CheckpointResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / (std::string("resume_") + info->name())).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// Resume passes over a torn newest checkpoint and a corrupt one, with a warning each, and the
// run still continues bit-identically from the one it restores.
TEST_F(CheckpointResumeTest, ResumePassesOverTornAndCorruptCheckpoints) {
  const auto sink_into = [](std::vector<std::string>& lines) {
    return [&lines](const std::string& line) { lines.push_back(line); };
  };
  std::vector<std::string> lines;
  TrainerOptions straight = testing::MlpOptions();
  straight.steps = 9;
  straight.eval_files.clear();
  straight.export_path = dir_ + "/straight.onnx";
  fs::create_directories(dir_);
  Train(straight, sink_into(lines));

  TrainerOptions first = testing::MlpOptions();
  first.steps = 6;
  first.eval_files.clear();
  first.checkpoint_dir = dir_ + "/checkpoints";
  first.checkpoint_every = 2;
  first.checkpoint_keep = 0;
  Train(first, sink_into(lines));
  ASSERT_EQ(ListCheckpoints(first.checkpoint_dir).size(), 3U);  // steps 2, 4, 6
  const std::string six = first.checkpoint_dir + "/checkpoint-6.ckpt";
  const std::string four = first.checkpoint_dir + "/checkpoint-4.ckpt";
  fs::resize_file(six, fs::file_size(six) / 2);
  {
    const CheckpointReader reader(four);
    FlipByte(four, reader.variables()[0].offset + 100);
  }

  lines.clear();
  TrainerOptions second = testing::MlpOptions();
  second.steps = 9;
  second.eval_files.clear();
  second.checkpoint_dir = first.checkpoint_dir;
  second.resume = true;
  second.export_path = dir_ + "/resumed.onnx";
  const TrainResult resumed = Train(second, sink_into(lines));
  EXPECT_EQ(resumed.resumed_from_step, 2);
  const std::string log = fmt::format("{}", fmt::join(lines, "\n"));
  EXPECT_THAT(log, HasSubstr("warning: checkpoint '" + six + "' is torn"));
  EXPECT_THAT(log, HasSubstr("warning: checkpoint '" + four + "' is corrupt"));
  EXPECT_EQ(ReadFileBytes(straight.export_path, "model"),
            ReadFileBytes(second.export_path, "model"));
}

TEST_F(CheckpointResumeTest, CheckpointOfAnotherModelIsAnErrorNotSkipped) {
  fs::create_directories(dir_);
  checkpoint::CheckpointContents contents;
  contents.meta.step = 3;
  tensor::Tensor w(tensor::DType::kFloat32, {3, 5});
  w.SetZero();
  contents.variables = {{"w", w}};  // the MLP has no such variable
  checkpoint::WriteCheckpoint(dir_, contents, 0);
  TrainerOptions options = testing::MlpOptions();
  options.steps = 5;
  options.checkpoint_dir = dir_;
  options.resume = true;
  const Error error = ErrorOf([&] { Train(options, [](const std::string&) {}); });
  EXPECT_THAT(error.what(), HasSubstr("checkpoint '" + dir_ + "/checkpoint-3.ckpt'"));
}

}  // namespace
}  // namespace autodist::exec
