#include "runtime/observe/device_spans.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/timeline_merge.h"
#include "tests/error_of.h"

namespace autodist::observe {
namespace {

using autodist::testing::ErrorOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("device_spans_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// The one complete event named `name`.
nlohmann::json Named(const nlohmann::json& events, const std::string& name) {
  for (const nlohmann::json& event : events) {
    if (event.value("ph", "") == "X" && event.value("name", "") == name) return event;
  }
  ADD_FAILURE() << "no span " << name;
  return nlohmann::json::object();
}

// What the NCCL communicator writes after each collective (gpu/collective/collective_times.h),
// written here without a GPU, comes back as the steps' reductions, and Perfetto gets a track
// per stream, named, apart from the threads' tracks.
TEST(DeviceSpansTest, CollectivesWrittenOnTheirStreamsTracksAreReadBack) {
  const std::string dir = FreshDir("round_trip");
  const std::string path = dir + "/worker-0.timeline.json";
  {
    Timeline timeline(path, "worker-0");
    timeline.NameThread("training");
    WriteDeviceCollective(timeline, {0, "all-reduce", "group-0", 1000, 1010, 1060});
    WriteDeviceCollective(timeline, {0, "all-reduce", "group-1", 1100, 1110, 1200});
    // Not an all-reduce, and an all-reduce without a ready time: written, not read as groups.
    WriteDeviceCollective(timeline, {0, "all-gather", "group-2/rows", 1150, 1210, 1220});
    WriteDeviceCollective(timeline, {0, "all-reduce", "group-3/p", std::nullopt, 1230, 1240});
    timeline.Close();
  }
  const std::map<int, std::vector<DeviceReduction>> read = ReadDeviceReductions(path);
  ASSERT_EQ(read.size(), 1U);
  const std::vector<DeviceReduction>& reductions = read.begin()->second;
  ASSERT_EQ(reductions.size(), 2U);
  EXPECT_EQ(reductions[0].tag, "group-0");
  EXPECT_EQ(reductions[0].ready_us, 1000);
  EXPECT_EQ(reductions[0].start_us, 1010);
  EXPECT_EQ(reductions[0].end_us, 1060);
  EXPECT_EQ(reductions[1].tag, "group-1");
  EXPECT_EQ(reductions[1].end_us, 1200);
  const DeviceOverlap overlap = MeasureDeviceOverlap(reductions);
  EXPECT_EQ(overlap.overlapped, 1);
  EXPECT_EQ(overlap.overlapped_us, 50);

  // Each stream's track is named once, and differs from the thread's.
  const nlohmann::json events = nlohmann::json::parse(ReadFileBytes(path, "timeline"));
  std::map<std::string, int> tracks;  // name -> tid
  int comm_spans = 0;
  int ready_marks = 0;
  for (const nlohmann::json& event : events) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      const auto name = event["args"]["name"].get<std::string>();
      EXPECT_FALSE(tracks.contains(name)) << name << " named twice";
      tracks[name] = event["tid"].get<int>();
    }
  }
  ASSERT_TRUE(tracks.contains("cuda:0 stream comm"));
  ASSERT_TRUE(tracks.contains("cuda:0 stream tensor"));
  EXPECT_NE(tracks["cuda:0 stream comm"], tracks["training"]);
  EXPECT_NE(tracks["cuda:0 stream comm"], tracks["cuda:0 stream tensor"]);
  for (const nlohmann::json& event : events) {
    if (event["ph"] == "X") {
      EXPECT_EQ(event["tid"], tracks["cuda:0 stream comm"]);
      ++comm_spans;
    }
    if (event["ph"] == "i") {
      EXPECT_EQ(event["tid"], tracks["cuda:0 stream tensor"]);
      ++ready_marks;
    }
  }
  EXPECT_EQ(comm_spans, 4);
  EXPECT_EQ(ready_marks, 3);
  EXPECT_EQ(Named(events, "nccl all-reduce group-1").at("dur"), 90);

  // The merged trace of a job reads the same, under the member's process.
  const std::string merged = dir + "/job.trace.json";
  MergeTimelines({{"worker-0", path}}, merged);
  const auto from_merged = ReadDeviceReductions(merged);
  ASSERT_EQ(from_merged.size(), 1U);
  EXPECT_EQ(from_merged.begin()->second.size(), 2U);
}

TEST(DeviceSpansTest, WhatIsNotATraceIsRefusedNamingTheFile) {
  const std::string dir = FreshDir("refused");
  std::ofstream(dir + "/text.json") << "not json";
  EXPECT_THAT(ErrorOf([&] { ReadDeviceReductions(dir + "/text.json"); }).what(),
              HasSubstr(dir + "/text.json: not JSON"));
  std::ofstream(dir + "/object.json") << R"({"events": 3})";
  const Error shape = ErrorOf([&] { ReadDeviceReductions(dir + "/object.json"); });
  EXPECT_EQ(shape.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(shape.what(), HasSubstr("expected an array of trace events"));
  std::ofstream(dir + "/span.json")
      << R"([{"ph":"X","cat":"device","name":"nccl all-reduce group-0","pid":1,"ts":5,)"
         R"("args":{"ready_us":1}}])";
  EXPECT_THAT(ErrorOf([&] { ReadDeviceReductions(dir + "/span.json"); }).what(),
              HasSubstr("device span 'nccl all-reduce group-0'"));
}

}  // namespace
}  // namespace autodist::observe
