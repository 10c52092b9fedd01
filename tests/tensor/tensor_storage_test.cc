// Tensor storage through the process-wide pool: tensors reuse freed buffers, Zeros zeroes a dirty
// reused one, Prefaulted maps a fresh buffer's pages, and AUTODIST_TENSOR_POOL_MB is validated.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/tensor/storage.h"
#include "runtime/tensor/tensor.h"

namespace autodist::tensor {
namespace {

constexpr int64_t kMiBFloats = int64_t{1} << 18;  // 1 MiB of float32

// Whether the process-wide pool caches the few MiB these tests free (AUTODIST_TENSOR_POOL_MB may
// disable it or cap it lower).
bool PoolCachesTestBuffers() { return TensorBufferPool().options().max_cached_bytes >= (8U << 20); }

TEST(TensorStorageTest, TensorsReuseFreedBuffers) {
  if (!PoolCachesTestBuffers()) GTEST_SKIP() << kTensorPoolEnv << " caps the pool below 8 MiB";
  const void* first = nullptr;
  {
    const Tensor t(DType::kFloat32, {4, kMiBFloats});
    first = t.raw();
  }
  const PoolStats before = TensorBufferPool().stats();
  const Tensor again(DType::kInt32, {kMiBFloats, 4});  // same bytes, other dtype and shape
  EXPECT_EQ(again.raw(), first);
  EXPECT_EQ(TensorBufferPool().stats().hits, before.hits + 1);
  // Clone allocates through the pool too.
  const Tensor copy = again.Clone();
  EXPECT_NE(copy.raw(), again.raw());
  EXPECT_EQ(TensorBufferPool().stats().hits + TensorBufferPool().stats().misses,
            before.hits + before.misses + 2);
}

TEST(TensorStorageTest, ZerosZeroesADirtyReusedBuffer) {
  const void* dirty_address = nullptr;
  {
    Tensor dirty(DType::kFloat32, {kMiBFloats + 3});
    std::fill(dirty.data<float>(), dirty.data<float>() + dirty.numel(), 7.5F);
    dirty_address = dirty.raw();
  }
  const Tensor zeros = Tensor::Zeros(DType::kFloat32, {kMiBFloats + 3});
  if (PoolCachesTestBuffers()) {
    EXPECT_EQ(zeros.raw(), dirty_address);  // the case under test
  }
  const auto* data = zeros.data<float>();
  EXPECT_TRUE(std::all_of(data, data + zeros.numel(), [](float v) { return v == 0.0F; }));
}

TEST(TensorStorageTest, StorageIsAlignedAndDistinct) {
  const Tensor empty_a(DType::kFloat32, {0});
  const Tensor empty_b(DType::kFloat32, {0});
  EXPECT_NE(empty_a.raw(), nullptr);
  EXPECT_NE(empty_a.raw(), empty_b.raw());
  for (const int64_t n : {int64_t{1}, int64_t{17}, int64_t{20000}, kMiBFloats + 1}) {
    const Tensor t(DType::kFloat32, {n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kBufferAlignment, 0U) << n;
  }
}

// Pages of [data, data + bytes) that are mapped in (mincore over whole pages inside the range).
size_t ResidentPages(const void* data, size_t bytes, size_t& total) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (start + page - 1) & ~(page - 1);
  const uintptr_t last = (start + bytes) & ~(page - 1);
  total = (last - first) / page;
  std::vector<unsigned char> resident(total);
  // NOLINTNEXTLINE(performance-no-int-to-ptr): mincore takes the page-aligned address
  if (mincore(reinterpret_cast<void*>(first), last - first, resident.data()) != 0) return 0;
  return static_cast<size_t>(std::count_if(resident.begin(), resident.end(),
                                           [](unsigned char r) { return (r & 1) != 0; }));
}

TEST(TensorStorageTest, PrefaultedMapsEveryPage) {
  // 40 MiB: above glibc's largest mmap threshold, so without the pool it is a fresh mapping.
  const Tensor t = Tensor::Prefaulted(DType::kFloat32, {10 * kMiBFloats});
  size_t total = 0;
  const size_t resident = ResidentPages(t.raw(), t.nbytes(), total);
  ASSERT_GT(total, 0U);
  EXPECT_EQ(resident, total);
  EXPECT_EQ(t.shape(), (Shape{10 * kMiBFloats}));
}

// The binaries configure the pool at startup; once it exists, only the same options are accepted.
TEST(TensorStorageTest, ARowsViewSharesTheRowsStorage) {
  Tensor table(DType::kFloat32, {5, 3});
  for (int64_t i = 0; i < 15; ++i) table.data<float>()[i] = static_cast<float>(i);
  Tensor rows = table.RowsView(1, 2);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_EQ(rows.numel(), 6);
  EXPECT_TRUE(rows.SharesStorageWith(table));
  EXPECT_EQ(rows.data<float>()[0], 3.0F);
  EXPECT_EQ(rows.data<float>()[5], 8.0F);
  rows.data<float>()[5] = -1;  // lands in row 2 of the table
  EXPECT_EQ(table.data<float>()[8], -1.0F);
  // A view of a view, an empty view at the end, and a copy that no longer shares.
  EXPECT_EQ(rows.RowsView(1, 1).data<float>()[0], 6.0F);
  EXPECT_EQ(table.RowsView(5, 0).numel(), 0);
  EXPECT_EQ(rows.Clone().data<float>()[5], -1.0F);
  EXPECT_FALSE(rows.Clone().SharesStorageWith(table));
  EXPECT_THROW(table.RowsView(4, 2), Error);
  EXPECT_THROW(table.RowsView(-1, 1), Error);
  EXPECT_THROW(Tensor::Scalar(1.0F).RowsView(0, 1), Error);
}

TEST(TensorPoolOptionsTest, ConfiguredBeforeTheFirstTensorOnly) {
  const PoolOptions current = TensorBufferPool().options();
  ConfigureTensorPool(current);  // the same options: nothing to change
  PoolOptions other = current;
  other.max_cached_bytes += 1 << 20;
  try {
    ConfigureTensorPool(other);
    ADD_FAILURE() << "the pool in use was reconfigured";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  }
  EXPECT_EQ(TensorBufferPool().options().max_cached_bytes, current.max_cached_bytes);
}

TEST(TensorPoolOptionsTest, ParsesMegabytes) {
  EXPECT_EQ(ParseTensorPoolOptions(nullptr).max_cached_bytes, PoolOptions().max_cached_bytes);
  EXPECT_EQ(ParseTensorPoolOptions("0").max_cached_bytes, 0U);
  EXPECT_EQ(ParseTensorPoolOptions("256").max_cached_bytes, size_t{256} << 20);
  EXPECT_EQ(ParseTensorPoolOptions("256").min_pooled_bytes, PoolOptions().min_pooled_bytes);
}

TEST(TensorPoolOptionsTest, RejectsAnythingButAWholeNumber) {
  for (const char* bad : {"", "64MB", "-1", " 5", "1e3", "1.5", "99999999999999999999"}) {
    try {
      ParseTensorPoolOptions(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(kTensorPoolEnv), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace autodist::tensor
