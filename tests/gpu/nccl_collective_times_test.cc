// The NCCL communicator's device times on the timeline (gpu/collective/collective_times.h), on
// one GPU and one rank: while a timeline records, each collective becomes a span on its GPU's
// communication-stream track, in the timeline's microseconds, after its data-ready mark and
// within the host's reading of the calls; without a timeline nothing is recorded. Whether a
// reduction overlaps backward is gpu.NcclDeviceOverlapJobTest's. Without a GPU every test is
// SKIPPED.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/collective/registry.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/device_overlap.h"
#include "runtime/observe/device_spans.h"
#include "runtime/observe/timeline.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using collective::AllReduceAlgorithm;
using collective::ElementType;
using testing::DeviceArray;

// The anchor pairs the clocks at the midpoint of a wait on an idle stream: well within this.
constexpr int64_t kClockSlackMicros = 1000;

std::unique_ptr<collective::Communicator> OneRank(const std::string& prefix) {
  collective::CommunicatorOptions options;
  options.rank = 0;
  options.size = 1;
  options.rendezvous = std::make_shared<collective::MemoryRendezvousStore>();
  options.prefix = prefix;
  options.device = 0;
  options.connect_timeout = std::chrono::seconds(60);
  options.timeout = std::chrono::seconds(60);
  return collective::MakeCommunicator("nccl", options);
}

// Complete events' names in the timeline at `path`, with their counts.
std::map<std::string, int> SpanCounts(const std::string& path) {
  std::map<std::string, int> counts;
  for (const auto& event : nlohmann::json::parse(ReadFileBytes(path, "timeline"))) {
    if (event.value("ph", "") == "X") ++counts[event.value("name", "")];
  }
  return counts;
}

TEST(NcclCollectiveTimesTest, EachCollectiveIsASpanOnItsStreamAfterItsDataWasReady) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const std::string path =
      (std::filesystem::temp_directory_path() / "nccl_collective_times.timeline.json").string();
  const size_t count = size_t{1} << 20;
  DeviceArray<float> data(std::vector<float>(count, 1.0F));
  int64_t before = 0;
  int64_t after = 0;
  {
    observe::Timeline timeline(path, "worker-0");
    observe::SetActiveTimeline(&timeline);
    const auto comm = OneRank("timed");
    before = observe::Timeline::NowMicros();
    for (int step = 0; step < 3; ++step) {
      comm->DataReady("group-0");
      comm->AllReduceSum(data.get(), count, ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                         "group-0");
      // Not marked ready: a span without a ready time, not read as a group.
      comm->AllReduceSum(data.get(), count, ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                         "group-1");
    }
    comm->Barrier("end");
    after = observe::Timeline::NowMicros();
    observe::SetActiveTimeline(nullptr);
    timeline.Close();
  }
  const auto by_process = observe::ReadDeviceReductions(path);
  ASSERT_EQ(by_process.size(), 1U);
  const std::vector<observe::DeviceReduction>& reductions = by_process.begin()->second;
  ASSERT_EQ(reductions.size(), 3U);
  int64_t previous_end = before - kClockSlackMicros;
  for (const observe::DeviceReduction& reduction : reductions) {
    EXPECT_EQ(reduction.tag, "group-0");
    EXPECT_GE(reduction.ready_us, previous_end);
    EXPECT_LE(reduction.ready_us, reduction.start_us);
    EXPECT_LE(reduction.start_us, reduction.end_us);
    EXPECT_LE(reduction.end_us, after + kClockSlackMicros);
    previous_end = reduction.end_us;
  }
  EXPECT_EQ(observe::SplitIntoSteps(reductions).size(), 3U);
  const std::map<std::string, int> spans = SpanCounts(path);
  EXPECT_EQ(spans.at("nccl all-reduce group-0"), 3);
  EXPECT_EQ(spans.at("nccl all-reduce group-1"), 3);
  EXPECT_EQ(spans.at("nccl barrier end"), 1);
}

TEST(NcclCollectiveTimesTest, WithoutATimelineNothingIsRecordedAndTheCallsRun) {
  AUTODIST_SKIP_WITHOUT_GPU();
  ASSERT_EQ(observe::ActiveTimeline(), nullptr);
  const auto comm = OneRank("untimed");
  DeviceArray<float> data(std::vector<float>{1.0F, 2.0F, 3.0F});
  comm->DataReady("group-0");
  comm->AllReduceSum(data.get(), 3, ElementType::kFloat32, AllReduceAlgorithm::kAuto, "group-0");
  EXPECT_EQ(data.Read(), (std::vector<float>{1.0F, 2.0F, 3.0F}));
}

}  // namespace
}  // namespace autodist::gpu
