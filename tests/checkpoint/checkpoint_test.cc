// The checkpoint file and directory: round trip, torn and corrupt files named, the previous
// format still read, retention, a full disk.
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
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/error_of.h"

namespace autodist::checkpoint {
namespace {

using autodist::testing::ErrorOf;
using testing::FlipByte;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

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

// A tensor large enough to be read in pieces while another thread checksums them: it reads back
// whole, and a flipped byte near its end is still caught.
TEST_F(CheckpointTest, LargeTensorsAreReadAndChecksummedInPieces) {
  CheckpointContents contents = Contents(8);
  contents.variables.emplace_back("large", Ramp({40 << 20 >> 2}, 0));  // 40 MiB
  const std::string path = WriteCheckpoint(dir_, contents, 3);
  const CheckpointReader reader(path);
  // On a page of its own, so it moves between the disk and its storage by direct I/O.
  EXPECT_EQ(reader.Find("large")->offset % 4096, 0U);
  EXPECT_EQ(Values(reader.Read(*reader.Find("large"))), Values(contents.variables[2].second));
  const uint64_t end = reader.Find("large")->offset + reader.Find("large")->length;
  FlipByte(path, end - 5);
  EXPECT_THAT(ErrorOf([&] { reader.Read(*reader.Find("large")); }).what(),
              HasSubstr("tensor 'large' fails its checksum"));
  fs::resize_file(path, end - (8 << 20));  // cut inside it: the read fails, naming the file
  EXPECT_THAT(ErrorOf([&] { reader.Read(*reader.Find("large")); }).what(), HasSubstr(path));
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

TEST_F(CheckpointTest, DimsThatDoNotFitTheBytesAreRefusedBeforeAnythingIsAllocated) {
  // The fuzzer's find: a previous-format message whose dims asked for a tensor of terabytes
  // (and dims whose product overflows to the stored size) was allocated before being checked.
  fs::create_directories(dir_);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{int64_t{1} << 40}, {int64_t{1} << 62, 4}, {-2}}) {
    proto::Checkpoint old;
    proto::TensorValue* value = old.add_variables();
    value->set_name("w");
    value->set_data_type(1);
    for (const int64_t dim : dims) value->add_dims(dim);
    value->set_data(std::string(8, '\0'));
    const std::string path = dir_ + "/checkpoint-1.pb";
    WriteFileBytes(path, old.SerializeAsString());
    const Error error = ErrorOf([&] { CheckpointReader reader(path); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("tensor 'w'")) << error.what();
  }
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

// A tensor kept in other files: pieces along axis 1 (strided), along axis 0 (contiguous) and
// whole, each read from its file and checked there.
TEST_F(CheckpointTest, PiecedTensorsAreAssembledFromTheirFiles) {
  fs::create_directories(dir_);
  const tensor::Tensor whole = Ramp({4, 6}, 0);
  // Columns 0..2 in shard file 0, columns 2..6 in shard file 1 (axis 1), and the rows 0..1 and
  // 1..4 of a second tensor (axis 0), and a whole scalar-like tensor.
  const auto columns = [&](int64_t begin, int64_t end) {
    tensor::Tensor out(tensor::DType::kFloat32, {4, end - begin});
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t c = begin; c < end; ++c) {
        out.data<float>()[r * (end - begin) + c - begin] = whole.data<float>()[r * 6 + c];
      }
    }
    return out;
  };
  const std::string path = CheckpointPath(dir_, 9);
  CheckpointContents first;
  first.variables = {{"m/part_0", columns(0, 2)}, {"rows/part_0", Ramp({1, 3}, 50)}};
  first.optimizer = {{"count", Ramp({2}, 7)}};
  WriteCheckpointFile(ShardFilePath(path, 0), first);
  CheckpointContents second;
  second.variables = {{"m/part_1", columns(2, 6)}, {"rows/part_1", Ramp({3, 3}, 53)}};
  WriteCheckpointFile(ShardFilePath(path, 1), second);

  CheckpointContents main;
  main.meta.step = 9;
  const std::string f0 = fs::path(ShardFilePath(path, 0)).filename().string();
  const std::string f1 = fs::path(ShardFilePath(path, 1)).filename().string();
  main.pieced_variables = {{"m",
                            tensor::DType::kFloat32,
                            {4, 6},
                            {{f0, "m/part_0", 1, 0, 2}, {f1, "m/part_1", 1, 2, 4}}},
                           {"rows",
                            tensor::DType::kFloat32,
                            {4, 3},
                            {{f0, "rows/part_0", 0, 0, 1}, {f1, "rows/part_1", 0, 1, 3}}}};
  main.pieced_optimizer = {{"count", tensor::DType::kFloat32, {2}, {{f0, "count"}}}};
  WriteCheckpoint(dir_, main, 3);

  const CheckpointReader reader(path);
  EXPECT_EQ(Values(reader.Read(*reader.Find("m"))), Values(whole));
  EXPECT_EQ(Values(reader.Read(*reader.Find("rows"))), Values(Ramp({4, 3}, 50)));
  EXPECT_EQ(Values(reader.Read(*reader.Find("count"))), Values(Ramp({2}, 7)));

  // A shard file gone, or cut short, is named when the tensor is read.
  fs::resize_file(ShardFilePath(path, 1), 20);
  EXPECT_THAT(ErrorOf([&] { reader.Read(*reader.Find("rows")); }).what(),
              HasSubstr(ShardFilePath(path, 1)));
  const CheckpointReader again(path);
  fs::remove(ShardFilePath(path, 1));
  const Error missing = ErrorOf([&] { again.Read(*again.Find("m")); });
  EXPECT_THAT(missing.what(), HasSubstr(ShardFilePath(path, 1) + "' does not exist"));
}

TEST_F(CheckpointTest, ShardFilesGoWithTheirCheckpoint) {
  fs::create_directories(dir_);
  for (const int64_t step : {1, 2, 3}) {
    const std::string path = CheckpointPath(dir_, step);
    WriteCheckpointFile(ShardFilePath(path, 0), Contents(step));
    WriteCheckpoint(dir_, Contents(step), 2);
  }
  // A server's shard file of a checkpoint the chief never wrote (a crash between the two) and a
  // server's unfinished write.
  WriteCheckpointFile(ShardFilePath(CheckpointPath(dir_, 4), 1), Contents(4));
  WriteFileBytes(ShardFilePath(CheckpointPath(dir_, 4), 0) + ".tmp", "cut short");
  // The shard file of the checkpoint being written now is kept while it is written.
  WriteCheckpointFile(ShardFilePath(CheckpointPath(dir_, 5), 0), Contents(5));
  WriteCheckpoint(dir_, Contents(5), 2);
  EXPECT_EQ(Names(), (std::vector<std::string>{"checkpoint-3.ckpt", "checkpoint-3.ckpt.ps-0",
                                               "checkpoint-5.ckpt", "checkpoint-5.ckpt.ps-0"}));
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

}  // namespace
}  // namespace autodist::checkpoint
