// Device memory: stream-ordered reuse without new reservations, usage figures, out-of-memory
// errors, and pinned buffers copying asynchronously both ways.
#include "gpu/memory/device_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "gpu/device/stream.h"
#include "gpu/memory/pinned_buffer.h"
#include "runtime/common/error.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using ::testing::HasSubstr;

TEST(DevicePoolTest, StepsAfterTheFirstReserveNothingNew) {
  AUTODIST_SKIP_WITHOUT_GPU();
  DevicePool pool;
  Stream stream;
  // A "step" that allocates buffers of several sizes and frees them all.
  const auto step = [&] {
    std::vector<DeviceBuffer> buffers;
    for (const size_t bytes : {size_t{1} << 20, size_t{3} << 20, size_t{256}, size_t{5} << 20}) {
      buffers.push_back(pool.Allocate(bytes, stream.get()));
    }
    EXPECT_GE(pool.used_bytes(), (size_t{9} << 20) + 256);
  };
  step();
  stream.Synchronize();
  const uint64_t reserved = pool.reserved_bytes();
  EXPECT_GT(reserved, 0U);
  for (int i = 0; i < 20; ++i) step();
  stream.Synchronize();
  EXPECT_EQ(pool.reserved_bytes(), reserved);
  EXPECT_EQ(pool.used_bytes(), 0U);
  EXPECT_GE(pool.peak_used_bytes(), (uint64_t{9} << 20) + 256);
  pool.ResetPeak();
  EXPECT_EQ(pool.peak_used_bytes(), 0U);
}

TEST(DevicePoolTest, OutOfMemoryNamesTheSizeAndThePool) {
  AUTODIST_SKIP_WITHOUT_GPU();
  DevicePool pool;
  Stream stream;
  try {
    pool.Allocate(size_t{1} << 50, stream.get());  // a pebibyte
    FAIL() << "a pebibyte was allocated";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("is out of memory: 1073741824.0 MiB asked for"));
  }
  // The pool still works.
  DeviceBuffer after = pool.Allocate(1024, stream.get());
  EXPECT_NE(after.data(), nullptr);
}

TEST(PinnedBufferTest, RoundTripsThroughTheDeviceOnAStream) {
  AUTODIST_SKIP_WITHOUT_GPU();
  DevicePool pool;
  Stream stream;
  constexpr size_t kCount = 1 << 20;
  PinnedBuffer out(kCount * sizeof(int32_t));
  PinnedBuffer back(kCount * sizeof(int32_t));
  std::iota(out.as<int32_t>(), out.as<int32_t>() + kCount, -7);
  DeviceBuffer device = pool.Allocate(kCount * sizeof(int32_t), stream.get());
  CopyAsync(device.data(), out.data(), out.bytes(), stream.get(), "to the device");
  CopyAsync(back.data(), device.data(), back.bytes(), stream.get(), "to the host");
  stream.Synchronize();
  for (size_t i = 0; i < kCount; i += 4099) {
    ASSERT_EQ(back.as<int32_t>()[i], static_cast<int32_t>(i) - 7) << "element " << i;
  }
}

TEST(StreamTest, EventsOrderAndTimeWorkAcrossStreams) {
  AUTODIST_SKIP_WITHOUT_GPU();
  DevicePool pool;
  Stream copy;
  Stream compute;
  constexpr size_t kBytes = size_t{64} << 20;
  PinnedBuffer host(kBytes);
  std::fill_n(host.as<char>(), kBytes, 'x');
  DeviceBuffer device = pool.Allocate(kBytes, copy.get());
  Event start(/*timing=*/true);
  Event copied(/*timing=*/true);
  start.Record(copy.get());
  CopyAsync(device.data(), host.data(), kBytes, copy.get(), "to the device");
  copied.Record(copy.get());
  copied.MakeWait(compute.get());
  PinnedBuffer back(kBytes);
  CopyAsync(back.data(), device.data(), kBytes, compute.get(), "back to the host");
  compute.Synchronize();
  EXPECT_EQ(back.as<char>()[kBytes - 1], 'x');
  EXPECT_GT(copied.ElapsedMsSince(start), 0.0F);
}

}  // namespace
}  // namespace autodist::gpu
