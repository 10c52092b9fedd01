// How `autodist run` deals the machine's GPUs to its GPU workers (CUDA_VISIBLE_DEVICES).
#include "launcher/worker_gpus.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/launcher/launcher_test_util.h"

namespace autodist::launcher {
namespace {

using Gpus = std::vector<std::string>;

TEST(WorkerGpusTest, TheCallersVisibleDevicesComeFirst) {
  EXPECT_EQ(VisibleGpus("2,5", "/nonexistent"), (Gpus{"2", "5"}));
  EXPECT_EQ(VisibleGpus("GPU-8f0c,,GPU-17aa", "/nonexistent"), (Gpus{"GPU-8f0c", "GPU-17aa"}));
  // Set but empty: no GPU may be used, whatever the driver lists.
  EXPECT_EQ(VisibleGpus("", "/proc"), Gpus{});
}

TEST(WorkerGpusTest, WithoutThemTheDriversListCountsTheGpus) {
  TempDir dir;
  const std::filesystem::path gpus = dir.path() / "gpus";
  for (const char* bus : {"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0"}) {
    std::filesystem::create_directories(gpus / bus);
  }
  EXPECT_EQ(VisibleGpus(nullptr, gpus.string()), (Gpus{"0", "1", "2"}));
  EXPECT_EQ(VisibleGpus(nullptr, (dir.path() / "no-driver").string()), Gpus{});
}

TEST(WorkerGpusTest, WorkersTakeTheGpusInTurnAndShareThemWhenTooFew) {
  const Gpus four{"0", "1", "2", "3"};
  EXPECT_EQ(WorkerVisibleDevices(0, 1, four), "0");
  EXPECT_EQ(WorkerVisibleDevices(3, 1, four), "3");
  EXPECT_EQ(WorkerVisibleDevices(1, 2, four), "2,3");
  EXPECT_EQ(WorkerVisibleDevices(2, 1, Gpus{"0", "1"}), "0");  // wraps: shared with worker 0
  EXPECT_EQ(WorkerVisibleDevices(1, 1, Gpus{"7"}), "7");
  // More GPUs per worker than there are: each once (CUDA refuses a GPU listed twice).
  EXPECT_EQ(WorkerVisibleDevices(1, 3, Gpus{"0", "1"}), "0,1");
  EXPECT_EQ(WorkerVisibleDevices(0, 1, Gpus{}), "");
}

}  // namespace
}  // namespace autodist::launcher
