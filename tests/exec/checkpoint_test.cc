// The checkpoint file and directory: round trip, torn and corrupt files named (and passed over on
// resume), the previous format still read, retention, a full disk.
#include "runtime/exec/checkpoint.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "proto/checkpoint.pb.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/exec/trainer.h"
#include "tests/exec/trainer_test_util.h"

namespace autodist::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

Error ErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an autodist::Error";
  return Error(ErrorCode::kInternal, "no error was thrown");
}

tensor::Tensor Ramp(tensor::Shape shape, float start) {
  tensor::Tensor t(tensor::DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

CheckpointContents Contents(int64_t step) {
  CheckpointContents contents;
  contents.meta = CheckpointMeta{step, 2, 5, "1 2 3", "model.onnx"};
  contents.variables = {{"w", Ramp({3, 5}, static_cast<float>(step))}, {"b", Ramp({7}, -1)}};
  contents.states = {{"bn.running_mean", Ramp({2}, 0.5F)}};
  tensor::Tensor count(tensor::DType::kInt64, {});
  count.data<int64_t>()[0] = step;
  contents.optimizer = {{"w/exp_avg", Ramp({3, 5}, 9)}, {"w/step", count}};
  return contents;
}

std::vector<float> Values(const tensor::Tensor& t) {
  return {t.data<float>(), t.data<float>() + t.numel()};
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / (std::string("checkpoint_") + info->name())).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TEST_F(CheckpointTest, RoundTripsMetaAndEveryTensor) {
  const CheckpointContents contents = Contents(12);
  const std::string path = WriteCheckpoint(dir_, contents, 3);
  EXPECT_EQ(path, dir_ + "/checkpoint-12.ckpt");
  EXPECT_EQ(Names(), std::vector<std::string>{"checkpoint-12.ckpt"});  // no temporary left
  EXPECT_EQ(fs::file_size(path), CheckpointFileSize(contents));

  const CheckpointReader reader(path);
  EXPECT_EQ(reader.meta().step, 12);
  EXPECT_EQ(reader.meta().epoch, 2);
  EXPECT_EQ(reader.meta().batch, 5);
  EXPECT_EQ(reader.meta().rng_state, "1 2 3");
  EXPECT_EQ(reader.meta().model, "model.onnx");
  ASSERT_EQ(reader.variables().size(), 2U);
  EXPECT_EQ(reader.variables()[0].name, "w");
  EXPECT_EQ(reader.variables()[0].shape, (tensor::Shape{3, 5}));
  EXPECT_EQ(reader.variables()[0].offset % 64, 0U);
  EXPECT_EQ(Values(reader.Read(reader.variables()[0])), Values(contents.variables[0].second));
  EXPECT_EQ(Values(reader.Read(reader.variables()[1])), Values(contents.variables[1].second));
  ASSERT_EQ(reader.states().size(), 1U);
  EXPECT_EQ(Values(reader.Read(reader.states()[0])), Values(contents.states[0].second));
  ASSERT_EQ(reader.optimizer().size(), 2U);
  EXPECT_EQ(reader.optimizer()[1].dtype, tensor::DType::kInt64);
  EXPECT_EQ(reader.Read(reader.optimizer()[1]).data<int64_t>()[0], 12);
}

TEST_F(CheckpointTest, TornFileIsNamedAsTorn) {
  const std::string path = WriteCheckpoint(dir_, Contents(4), 3);
  fs::resize_file(path, fs::file_size(path) - 30);  // a write the crash cut short
  const Error error = ErrorOf([&] { CheckpointReader reader(path); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("checkpoint '" + path + "' is torn"));
  fs::resize_file(path, 5);
  EXPECT_THAT(ErrorOf([&] { CheckpointReader reader(path); }).what(),
              HasSubstr("is not a checkpoint"));
}

// Flips one byte at `offset` of `path`.
void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

TEST_F(CheckpointTest, FlippedBitsInATensorFailItsChecksum) {
  const std::string path = WriteCheckpoint(dir_, Contents(4), 3);
  uint64_t offset = 0;
  {
    const CheckpointReader reader(path);
    offset = reader.variables()[1].offset + 3;
  }
  FlipByte(path, offset);
  const CheckpointReader reader(path);  // the header is intact
  EXPECT_NO_THROW(reader.Read(reader.variables()[0]));
  EXPECT_THAT(ErrorOf([&] { reader.Read(reader.variables()[1]); }).what(),
              HasSubstr("is corrupt: tensor 'b' fails its checksum"));
}

TEST_F(CheckpointTest, FlippedBitsInTheHeaderFailItsChecksum) {
  const std::string path = WriteCheckpoint(dir_, Contents(4), 3);
  FlipByte(path, fs::file_size(path) - 24 - 5);  // inside the header
  EXPECT_THAT(ErrorOf([&] { CheckpointReader reader(path); }).what(),
              HasSubstr("its header fails its checksum"));
}

TEST_F(CheckpointTest, PreviousFormatIsStillRead) {
  fs::create_directories(dir_);
  proto::Checkpoint old;
  old.set_step(30);
  old.set_epoch(1);
  old.set_rng_state("4 5");
  proto::TensorValue* value = old.add_variables();
  value->set_name("w");
  value->set_data_type(1);
  value->add_dims(2);
  const std::vector<float> data = {1.5F, -2.0F};
  value->set_data(data.data(), data.size() * sizeof(float));
  WriteFileBytes(dir_ + "/checkpoint-30.pb", old.SerializeAsString());
  WriteCheckpoint(dir_, Contents(20), 0);

  EXPECT_EQ(LatestCheckpoint(dir_), dir_ + "/checkpoint-30.pb");
  const CheckpointReader reader(*LatestCheckpoint(dir_));
  EXPECT_EQ(reader.meta().step, 30);
  EXPECT_EQ(reader.meta().rng_state, "4 5");
  ASSERT_EQ(reader.variables().size(), 1U);
  EXPECT_EQ(Values(reader.Read(reader.variables()[0])), data);
}

TEST_F(CheckpointTest, KeepsTheNewestAndRemovesUnfinishedWrites) {
  fs::create_directories(dir_);
  WriteFileBytes(dir_ + "/checkpoint-99.ckpt.tmp", "cut short");
  WriteFileBytes(dir_ + "/notes.txt", "not ours");
  for (const int64_t step : {1, 2, 3, 4, 5}) WriteCheckpoint(dir_, Contents(step), 2);
  EXPECT_EQ(Names(),
            (std::vector<std::string>{"checkpoint-4.ckpt", "checkpoint-5.ckpt", "notes.txt"}));
  EXPECT_EQ(ListCheckpoints(dir_),
            (std::vector<std::string>{dir_ + "/checkpoint-5.ckpt", dir_ + "/checkpoint-4.ckpt"}));
  // keep 0 keeps all.
  WriteCheckpoint(dir_, Contents(6), 0);
  EXPECT_EQ(ListCheckpoints(dir_).size(), 3U);
  // The checkpoint just written is never the one deleted, even below older runs' steps.
  WriteCheckpoint(dir_, Contents(1), 1);
  EXPECT_TRUE(fs::exists(dir_ + "/checkpoint-1.ckpt"));
  EXPECT_THAT(ErrorOf([&] { WriteCheckpoint(dir_, Contents(7), -1); }).what(),
              HasSubstr("keep is -1"));
}

// In a private mount namespace (root only), a 256 KiB tmpfs: a checkpoint that does not fit fails
// with the path and the bytes it needs, and the previous one stays whole.
TEST_F(CheckpointTest, FullDiskNamesThePathAndBytesAndKeepsThePrevious) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      _exit(77);
    }
    fs::create_directories(dir_);
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=256k") != 0) _exit(77);
    int failures = 0;
    const auto expect = [&](bool ok, const std::string& what) {
      if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
      }
    };
    WriteCheckpoint(dir_, Contents(1), 3);
    CheckpointContents big = Contents(2);
    big.variables.emplace_back("big", Ramp({128, 1024}, 0));  // 512 KiB
    try {
      WriteCheckpoint(dir_, big, 3);
      expect(false, "the big checkpoint was written");
    } catch (const Error& error) {
      const std::string message = error.what();
      expect(message.find(dir_ + "/checkpoint-2.ckpt") != std::string::npos, message);
      expect(message.find("no space left") != std::string::npos, message);
      expect(message.find(std::to_string(CheckpointFileSize(big)) + " bytes needed") !=
                 std::string::npos,
             message);
    }
    expect(ListCheckpoints(dir_) == std::vector<std::string>{dir_ + "/checkpoint-1.ckpt"},
           "only the previous checkpoint is there");
    expect(!fs::exists(dir_ + "/checkpoint-2.ckpt.tmp"), "the temporary was removed");
    const CheckpointReader reader(dir_ + "/checkpoint-1.ckpt");
    expect(reader.Read(reader.variables()[0]).data<float>()[0] == 1.0F, "previous reads back");
    umount(dir_.c_str());
    _exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "needs root to mount a small tmpfs";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the FAILED lines above";
}

// Resume passes over a torn newest checkpoint and a corrupt one, with a warning each, and the
// run still continues bit-identically from the one it restores.
TEST_F(CheckpointTest, ResumePassesOverTornAndCorruptCheckpoints) {
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

TEST_F(CheckpointTest, CheckpointOfAnotherModelIsAnErrorNotSkipped) {
  fs::create_directories(dir_);
  WriteCheckpoint(dir_, Contents(3), 0);  // 'w' [3,5]: the MLP has no such variable
  TrainerOptions options = testing::MlpOptions();
  options.steps = 5;
  options.checkpoint_dir = dir_;
  options.resume = true;
  const Error error = ErrorOf([&] { Train(options, [](const std::string&) {}); });
  EXPECT_THAT(error.what(), HasSubstr("checkpoint '" + dir_ + "/checkpoint-3.ckpt'"));
}

}  // namespace
}  // namespace autodist::exec
