#include "runtime/observe/timeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/observe/timeline_merge.h"
#include "tests/error_of.h"

namespace autodist::observe {
namespace {

using autodist::testing::ErrorOf;
namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("timeline_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

nlohmann::json Parse(const std::string& path) {
  return nlohmann::json::parse(ReadFileBytes(path, "timeline"));
}

// The events of `events` with this phase and name.
std::vector<nlohmann::json> Named(const nlohmann::json& events, const std::string& phase,
                                  const std::string& name) {
  std::vector<nlohmann::json> found;
  for (const auto& event : events) {
    if (event.value("ph", "") == phase && event.value("name", "") == name) found.push_back(event);
  }
  return found;
}

TEST(TimelineTest, SpansOfEachThreadGoOnTheirOwnTrack) {
  const std::string path = FreshDir("spans") + "/t.json";
  {
    Timeline timeline(path, "worker-0");
    SetActiveTimeline(&timeline);
    timeline.NameThread("training");
    {
      const Span span("compute", [] { return SpanText{"forward", R"("step":1)"}; });
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    std::thread other([] {
      ActiveTimeline()->NameThread("all-reduce");
      const Span span("sync", "reduce \"group-0\"");  // a name that needs escaping
    });
    other.join();
    ActiveTimeline()->Instant("sync", "group-0 ready");
    SetActiveTimeline(nullptr);
    const Span unrecorded("compute", "backward");  // no timeline active: nothing
  }
  const nlohmann::json events = Parse(path);
  ASSERT_TRUE(events.is_array());
  ASSERT_EQ(Named(events, "M", "process_name").size(), 1u);
  EXPECT_EQ(Named(events, "M", "process_name")[0]["args"]["name"], "worker-0");
  const auto forward = Named(events, "X", "forward");
  ASSERT_EQ(forward.size(), 1u);
  EXPECT_EQ(forward[0]["cat"], "compute");
  EXPECT_GE(forward[0]["dur"].get<int64_t>(), 3000);                          // microseconds
  EXPECT_GT(forward[0]["ts"].get<int64_t>(), int64_t{1600000000} * 1000000);  // wall clock
  EXPECT_EQ(forward[0]["args"]["step"], 1);
  const auto reduce = Named(events, "X", "reduce \"group-0\"");
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_NE(reduce[0]["tid"], forward[0]["tid"]);
  std::set<std::string> threads;
  for (const auto& event : Named(events, "M", "thread_name")) {
    threads.insert(event["args"]["name"].get<std::string>());
  }
  EXPECT_EQ(threads, (std::set<std::string>{"training", "all-reduce"}));
  EXPECT_EQ(Named(events, "i", "group-0 ready").size(), 1u);
  EXPECT_TRUE(Named(events, "X", "backward").empty());
  EXPECT_EQ(ActiveTimeline(), nullptr);
}

TEST(TimelineTest, ManyEventsStreamToTheFile) {
  const std::string path = FreshDir("many") + "/t.json";
  Timeline timeline(path, "p");
  // The first event is in the file at once: a process killed now still leaves a timeline.
  const auto header = fs::file_size(path);
  EXPECT_GT(header, 0u);
  for (int i = 0; i < 5000; ++i) timeline.Complete("c", "span " + std::to_string(i), i, 1);
  // The writer streams them while the recording goes on (within a second), not at the end.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (fs::file_size(path) < 256u * 1024u && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(fs::file_size(path), 256u * 1024u);
  timeline.Close();
  EXPECT_EQ(Parse(path).size(), 5001u);
  timeline.Complete("c", "after close", 0, 1);  // dropped, and no crash
  EXPECT_EQ(Parse(path).size(), 5001u);
}

TEST(TimelineTest, NamesThatAreNotUtf8AreRecordedNotFatal) {
  const std::string path = FreshDir("utf8") + "/t.json";
  {
    Timeline timeline(path, "p");
    SetActiveTimeline(&timeline);
    {
      const Span span("optimizer", [] { return SpanText{"apply w\xff\xfe", ""}; });
    }
    SetActiveTimeline(nullptr);
  }
  const nlohmann::json events = Parse(path);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["name"], "apply w\xEF\xBF\xBD\xEF\xBF\xBD");  // U+FFFD twice
}

TEST(TimelineTest, UnwritablePathIsNamed) {
  const std::string dir = FreshDir("unwritable");
  const Error error = ErrorOf([&] { Timeline timeline(dir + "/missing/t.json", "p"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(error.what()).find("timeline " + dir + "/missing/t.json"),
            std::string::npos)
      << error.what();
}

TEST(TimelineMergeTest, EachMemberBecomesANamedProcess) {
  const std::string dir = FreshDir("merge");
  {
    Timeline chief(dir + "/worker-0.json", "worker-0");
    chief.Complete("compute", "forward", 100, 10);
    Timeline server(dir + "/ps-0.json", "ps-0");
    server.Complete("optimizer", "apply w", 105, 2);
  }
  // A member that died: no closing bracket, half an event at the end.
  WriteFileBytes(
      dir + "/worker-1.json",
      "[\n{\"ph\":\"X\",\"name\":\"forward\",\"pid\":9,\"tid\":1,\"ts\":101,\"dur\":9},\n"
      "{\"ph\":\"X\",\"name\":\"backw");
  const int merged = MergeTimelines({{"worker-0", dir + "/worker-0.json"},
                                     {"worker-1", dir + "/worker-1.json"},
                                     {"worker-2", dir + "/never-started.json"},
                                     {"ps-0", dir + "/ps-0.json"}},
                                    dir + "/job.json");
  EXPECT_EQ(merged, 3);
  const nlohmann::json trace = Parse(dir + "/job.json");
  const nlohmann::json& events = trace.at("traceEvents");
  std::map<int, std::string> processes;
  for (const auto& event : Named(events, "M", "process_name")) {
    processes[event["pid"].get<int>()] = event["args"]["name"].get<std::string>();
  }
  // Members keep their order (pid = index + 1); the one without a file is left out.
  EXPECT_EQ(processes, (std::map<int, std::string>{{1, "worker-0"}, {2, "worker-1"}, {4, "ps-0"}}));
  const auto forward = Named(events, "X", "forward");
  ASSERT_EQ(forward.size(), 2u);
  std::set<int> pids;
  for (const auto& event : forward) pids.insert(event["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{1, 2}));
  ASSERT_EQ(Named(events, "X", "apply w").size(), 1u);
  EXPECT_EQ(Named(events, "X", "apply w")[0]["pid"], 4);
}

TEST(TimelineMergeTest, AFileThatIsNoTimelineIsNamed) {
  const std::string dir = FreshDir("bad");
  WriteFileBytes(dir + "/w.json", "{\"not\": \"an array\"}");
  const std::string message = ErrorOf([&] {
                                MergeTimelines({{"worker-0", dir + "/w.json"}}, dir + "/job.json");
                              }).what();
  EXPECT_NE(message.find("timeline " + dir + "/w.json"), std::string::npos) << message;
}

}  // namespace
}  // namespace autodist::observe
