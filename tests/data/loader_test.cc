#include "runtime/data/loader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/data/sampler.h"
#include "runtime/data/shuffle.h"
#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

using tensor::Shape;
using tensor::Tensor;
using testing::ExpectError;

// n rows whose "id" column holds the row number, plus a float feature 10 * id.
std::shared_ptr<const Dataset> Rows(int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  std::vector<float> features(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    ids[static_cast<size_t>(i)] = i;
    features[static_cast<size_t>(i)] = 10.0F * static_cast<float>(i);
  }
  return std::make_shared<const Dataset>(
      Dataset::FromColumns({{"id", Tensor::FromVector<int64_t>({n}, ids), "ids.npy"},
                            {"x", Tensor::FromVector<float>({n, 1}, features), "x.npy"}}));
}

std::vector<int64_t> Ids(const Batch& batch) {
  const Tensor& id = batch.feeds.at("id");
  return {id.data<int64_t>(), id.data<int64_t>() + id.numel()};
}

LoaderOptions Options(int64_t batch_size, bool shuffle = false) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.shuffle = shuffle;
  return options;
}

TEST(LoaderTest, BatchesInOrderAndWrapsToTheNextEpoch) {
  Loader loader(Rows(10), Options(4), {});
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  EXPECT_EQ(loader.rows_per_epoch(), 10);
  EXPECT_EQ(loader.position(), (Position{0, 0}));
  Batch b = loader.Next();
  EXPECT_EQ(Ids(b), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(b.rows, 4);
  EXPECT_EQ(b.position, (Position{0, 0}));
  EXPECT_EQ(b.feeds.at("x").shape(), (Shape{4, 1}));
  EXPECT_EQ(b.feeds.at("x").data<float>()[3], 30.0F);
  EXPECT_EQ(Ids(loader.Next()), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(loader.position(), (Position{0, 2}));
  b = loader.Next();  // the short last batch
  EXPECT_EQ(Ids(b), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(b.rows, 2);
  EXPECT_EQ(b.position, (Position{0, 2}));
  EXPECT_EQ(loader.position(), (Position{1, 0}));
  b = loader.Next();
  EXPECT_EQ(b.position, (Position{1, 0}));
  EXPECT_EQ(Ids(b), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(LoaderTest, DropLastBatchSkipsTheShortBatch) {
  LoaderOptions options = Options(4);
  options.drop_last_batch = true;
  Loader loader(Rows(10), options, {});
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  EXPECT_EQ(Ids(loader.Next()), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(Ids(loader.Next()), (std::vector<int64_t>{4, 5, 6, 7}));
  const Batch b = loader.Next();
  EXPECT_EQ(b.position, (Position{1, 0}));
  EXPECT_EQ(Ids(b), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(LoaderTest, ShufflesEachEpochWithSeedPlusEpoch) {
  LoaderOptions options = Options(5, true);
  options.seed = 77;
  Loader loader(Rows(10), options, {});
  std::vector<int64_t> epoch0 = Ids(loader.Next());
  for (const int64_t id : Ids(loader.Next())) epoch0.push_back(id);
  std::vector<int64_t> epoch1 = Ids(loader.Next());
  for (const int64_t id : Ids(loader.Next())) epoch1.push_back(id);
  EXPECT_EQ(epoch0, Permutation(10, 77));
  EXPECT_EQ(epoch1, Permutation(10, 78));
  EXPECT_NE(epoch0, epoch1);
  // Another loader with the same options repeats the stream.
  Loader again(Rows(10), options, {});
  EXPECT_EQ(Ids(again.Next()), std::vector<int64_t>(epoch0.begin(), epoch0.begin() + 5));
}

TEST(LoaderTest, RanksTogetherReadEveryRowOncePerEpoch) {
  // 24 rows over 3 ranks, batch 3: each rank reads 8 rows in 3 batches (3, 3, 2).
  std::vector<int> seen(24, 0);
  for (int rank = 0; rank < 3; ++rank) {
    LoaderOptions options = Options(3, true);
    options.seed = 5;
    options.rank = rank;
    options.world_size = 3;
    Loader loader(Rows(24), options, {});
    ASSERT_EQ(loader.batches_per_epoch(), 3);
    std::vector<int64_t> mine;
    for (int i = 0; i < 3; ++i) {
      for (const int64_t id : Ids(loader.Next())) {
        ++seen[static_cast<size_t>(id)];
        mine.push_back(id);
      }
    }
    EXPECT_EQ(mine, Shard(Permutation(24, 5), rank, 3, false)) << rank;
  }
  EXPECT_EQ(seen, std::vector<int>(24, 1));
}

TEST(LoaderTest, PadsOrDropsTheTailAcrossRanks) {
  // 10 rows over 4 ranks without shuffling (torch DistributedSampler by hand): rank 2 reads
  // 2, 6 and the padding row 0; with drop_last it reads 2, 6.
  LoaderOptions options = Options(8);
  options.rank = 2;
  options.world_size = 4;
  EXPECT_EQ(Ids(Loader(Rows(10), options, {}).Next()), (std::vector<int64_t>{2, 6, 0}));
  options.drop_last = true;
  EXPECT_EQ(Ids(Loader(Rows(10), options, {}).Next()), (std::vector<int64_t>{2, 6}));
}

TEST(LoaderTest, ResumingAtAPositionYieldsTheBatchesThatWouldHaveFollowed) {
  LoaderOptions options = Options(3, true);
  options.seed = 11;
  options.world_size = 2;
  options.rank = 1;
  const auto dataset = Rows(17);  // 9 rows per rank (one padded), 3 batches per epoch
  Loader reference(dataset, options, {});
  std::vector<Batch> stream;
  std::vector<Position> positions;
  for (int i = 0; i < 10; ++i) {
    positions.push_back(reference.position());
    stream.push_back(reference.Next());
  }
  for (const size_t resume_at : {1U, 3U, 5U, 7U}) {
    Loader resumed(dataset, options, {}, positions[resume_at]);
    EXPECT_EQ(resumed.position(), positions[resume_at]);
    for (size_t i = resume_at; i < stream.size(); ++i) {
      const Batch b = resumed.Next();
      EXPECT_EQ(b.position, stream[i].position) << i;
      EXPECT_EQ(Ids(b), Ids(stream[i])) << "resumed at " << resume_at << ", batch " << i;
    }
  }
  EXPECT_EQ(positions[3], (Position{1, 0}));
  EXPECT_EQ(positions[5], (Position{1, 2}));
}

TEST(LoaderTest, SynchronousModeProducesTheSameStream) {
  LoaderOptions options = Options(4, true);
  options.seed = 3;
  Loader prefetching(Rows(10), options, {});
  options.prefetch = 0;
  Loader synchronous(Rows(10), options, {});
  for (int i = 0; i < 7; ++i) {
    const Batch a = prefetching.Next();
    const Batch b = synchronous.Next();
    EXPECT_EQ(a.position, b.position);
    EXPECT_EQ(Ids(a), Ids(b));
  }
  EXPECT_EQ(prefetching.position(), synchronous.position());
}

// A "GPU" whose memory is host memory, that records the uploads it starts and the ones its
// device work is ordered after, as the CUDA backend's copy stream and events would be.
class UploadRecorder final : public tensor::DeviceMemory {
 public:
  std::shared_ptr<std::byte[]> Allocate(size_t bytes, int /*index*/) override {  // NOLINT
    return std::shared_ptr<std::byte[]>(new std::byte[bytes]);                   // NOLINT
  }
  void Copy(void* destination, const tensor::Device& /*to*/, const void* source,
            const tensor::Device& /*from*/, size_t bytes) override {
    ++copies;
    std::memcpy(destination, source, bytes);
  }
  void Zero(void* data, const tensor::Device& /*device*/, size_t bytes) override {
    std::memset(data, 0, bytes);
  }
  Upload UploadAhead(const void* source, size_t bytes, const tensor::Device& device) override {
    Upload upload = DeviceMemory::UploadAhead(source, bytes, device);
    upload.ready = std::make_shared<int>(++started);
    std::lock_guard lock(mutex);
    threads.insert(std::this_thread::get_id());
    return upload;
  }
  void Await(const Upload& upload, const tensor::Device& /*device*/) override {
    awaited.push_back(*static_cast<const int*>(upload.ready.get()));
    std::lock_guard lock(mutex);
    await_threads.insert(std::this_thread::get_id());
  }
  std::atomic<int> started{0};
  std::atomic<int> copies{0};
  std::vector<int> awaited;  // Next()'s thread only
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::set<std::thread::id> await_threads;
};

std::vector<int64_t> HostIds(const Batch& batch) {
  const Tensor id = batch.feeds.at("id").To(tensor::Device::Cpu());
  return {id.data<int64_t>(), id.data<int64_t>() + id.numel()};
}

// For a device the prefetch thread starts each feed's copy there, and Next() orders the device's
// work after it on the caller's thread; the batches are those of a loader for the CPU.
TEST(LoaderTest, BatchesForADeviceAreUploadedAheadOnThePrefetchThread) {
  UploadRecorder memory;
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &memory);
  for (const int prefetch : {2, 0}) {
    LoaderOptions options = Options(4, true);
    options.prefetch = prefetch;
    Loader host(Rows(10), options, {});
    options.device = tensor::Device::Cuda(0);
    Loader device(Rows(10), options, {});
    for (int i = 0; i < 5; ++i) {
      const Batch a = host.Next();
      const Batch b = device.Next();
      EXPECT_EQ(b.position, a.position);
      for (const auto& [name, feed] : b.feeds) {
        EXPECT_EQ(feed.device(), tensor::Device::Cuda(0)) << name;
      }
      EXPECT_EQ(HostIds(b), Ids(a));
    }
  }
  // With prefetch: two feeds a batch uploaded ahead, away from the caller's thread, and taken
  // by it in order; without: plain copies on the caller's thread.
  EXPECT_GE(memory.started.load(), 10);
  ASSERT_GE(memory.awaited.size(), 10U);
  for (size_t i = 1; i < memory.awaited.size(); ++i) {
    EXPECT_NE(memory.awaited[i], memory.awaited[i - 1]);
  }
  EXPECT_FALSE(memory.threads.contains(std::this_thread::get_id()));
  EXPECT_EQ(memory.await_threads, std::set<std::thread::id>{std::this_thread::get_id()});
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, nullptr);
}

TEST(LoaderTest, AppliesRowShapes) {
  Loader loader(Rows(4), Options(2), {{"x", {1, 1}}, {"id", {}}});
  const Batch b = loader.Next();
  EXPECT_EQ(b.feeds.at("x").shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(b.feeds.at("id").shape(), (Shape{2}));
}

TEST(LoaderTest, ShutsDownCleanly) {
  // Destroyed right away, after the prefetch queue filled up (the thread waits for room),
  // mid-epoch, and after an epoch boundary; a large prefetch depth on a tiny dataset.
  { Loader loader(Rows(100), Options(7, true), {}); }
  {
    Loader loader(Rows(100), Options(7, true), {});
    loader.Next();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    LoaderOptions options = Options(1);
    options.prefetch = 64;
    Loader loader(Rows(3), options, {});
    for (int i = 0; i < 10; ++i) loader.Next();
    EXPECT_EQ(loader.position(), (Position{3, 1}));
  }
  // Moving a loader hands over its thread.
  Loader moved = Loader(Rows(5), Options(2), {});
  EXPECT_EQ(Ids(moved.Next()), (std::vector<int64_t>{0, 1}));
}

TEST(LoaderTest, ManyLoadersStartAndStopUnderLoad) {
  // Each loader's thread is started and joined; a leak or a deadlock shows up as a hang here.
  const auto dataset = Rows(50);
  for (int i = 0; i < 200; ++i) {
    LoaderOptions options = Options(4, true);
    options.prefetch = 1 + i % 3;
    Loader loader(dataset, options, {});
    for (int j = 0; j < i % 5; ++j) loader.Next();
  }
}

TEST(LoaderTest, RejectsBadOptions) {
  const auto dataset = Rows(10);
  const auto make = [&](LoaderOptions options, Position start = {}) {
    Loader loader(dataset, options, {}, start);
  };
  LoaderOptions options = Options(0);
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument,
              {"batch_size must be at least 1, got 0"});
  options = Options(4);
  options.rank = 2;
  options.world_size = 2;
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument, {"rank 2 is outside [0, 2)"});
  options.rank = -1;
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument, {"rank -1 is outside [0, 2)"});
  options = Options(4);
  options.world_size = 0;
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument,
              {"world_size must be at least 1"});
  options = Options(4);
  options.prefetch = -1;
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument, {"prefetch must be 0 or more"});
  options = Options(4);
  options.drop_last = true;
  options.world_size = 11;
  options.rank = 3;
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument,
              {"10 rows leave none for each of 11 ranks"});
  options = Options(11);
  options.drop_last_batch = true;
  ExpectError([&] { make(options); }, ErrorCode::kInvalidArgument,
              {"batch_size 11 exceeds the 10 rows"});
  ExpectError(
      [&] {
        make(Options(4), {0, 3});
      },
      ErrorCode::kInvalidArgument,
      {"start position (epoch 0, batch 3) is invalid", "batches 0..2"});
  ExpectError(
      [&] {
        make(Options(4), {-1, 0});
      },
      ErrorCode::kInvalidArgument, {"start position (epoch -1, batch 0)"});
  ExpectError([&] { Loader(nullptr, Options(4), {}); }, ErrorCode::kInvalidArgument,
              {"needs a dataset"});
}

TEST(LoaderTest, RejectsEmptyDatasetsAndBadRowShapesUpFront) {
  const auto empty = std::make_shared<const Dataset>(
      Dataset::FromColumns({{"x", Tensor::Zeros(tensor::DType::kFloat32, {0, 3}), "empty.npy"}}));
  ExpectError([&] { Loader(empty, Options(4), {}); }, ErrorCode::kInvalidArgument,
              {"dataset is empty", "empty.npy"});
  ExpectError(
      [&] {
        Loader(Rows(4), Options(2), {{"x", {3}}});
      },
      ErrorCode::kInvalidArgument,
      {"input 'x' expects rows of shape [3] but 'x.npy' has rows of shape [1]"});
}

}  // namespace
}  // namespace autodist::data
