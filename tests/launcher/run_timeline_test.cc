// `autodist run --timeline FILE`: every member records its timeline and the launcher merges them
// into one trace with a process per member, for PS and all-reduce strategies.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

// Member name -> the names of its complete events ("X"), with their counts.
std::map<std::string, std::map<std::string, int>> SpansByMember(const std::string& path) {
  const nlohmann::json trace = nlohmann::json::parse(ReadText(path));
  std::map<int, std::string> members;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.value("ph", "") == "M" && event.value("name", "") == "process_name") {
      members[event["pid"].get<int>()] = event["args"]["name"].get<std::string>();
    }
  }
  std::map<std::string, std::map<std::string, int>> spans;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.value("ph", "") != "X") continue;
    ++spans[members.at(event["pid"].get<int>())][event["name"].get<std::string>()];
  }
  return spans;
}

TEST(RunTimelineTest, ParameterServerJobHasATrackPerMember) {
  TempDir dir;
  JobParams params;
  params.name = "timeline-ps";
  params.steps = 3;
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.timeline = dir / "job.trace.json";
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_NE(outcome.out.find("timeline: " + options.timeline + " (3 of 3 members"),
            std::string::npos)
      << outcome.out;

  auto spans = SpansByMember(options.timeline);
  EXPECT_EQ(spans.size(), 3u);
  for (const char* worker : {"worker-0", "worker-1"}) {
    SCOPED_TRACE(worker);
    const auto& mine = spans[worker];
    for (const char* name : {"data wait", "forward", "backward", "synchronize", "push+pull ps-0"}) {
      ASSERT_TRUE(mine.contains(name)) << name;
      EXPECT_EQ(mine.at(name), 3) << name;  // once a step
    }
    EXPECT_EQ(mine.at("step 3"), 1);
  }
  EXPECT_EQ(spans["worker-0"].at("checkpoint"), 1);  // the chief's, at the end
  // The server applies every variable's update once a step (synchronous PS, both workers' sum).
  int applies = 0;
  for (const auto& [name, count] : spans["ps-0"]) {
    if (name.rfind("apply ", 0) == 0) applies += count;
  }
  EXPECT_GT(applies, 0);
  EXPECT_EQ(applies % 3, 0) << applies;
}

TEST(RunTimelineTest, AllReduceJobShowsGroupsAndTheirCollectives) {
  TempDir dir;
  JobParams params;
  params.name = "timeline-allreduce";
  params.builder = "AllReduce";
  params.parameter_servers = 0;
  params.steps = 2;
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.timeline = dir / "job.trace.json";
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const auto spans = SpansByMember(options.timeline);
  for (const char* worker : {"worker-0", "worker-1"}) {
    SCOPED_TRACE(worker);
    const auto& mine = spans.at(worker);
    int reduces = 0;
    int collectives = 0;
    for (const auto& [name, count] : mine) {
      if (name.rfind("reduce group-", 0) == 0) reduces += count;
      if (name.rfind("all-reduce group-", 0) == 0) collectives += count;
    }
    EXPECT_GT(reduces, 0);
    EXPECT_EQ(reduces % 2, 0) << reduces;  // every group, every step
    EXPECT_GE(collectives, reduces);       // a collective (at least) within each reduction
    EXPECT_EQ(mine.at("optimizer"), 2);
  }
}

TEST(RunTimelineTest, AJobStoppedByItsDeadlineStillLeavesEveryMembersTimeline) {
  TempDir dir;
  JobParams params;
  params.name = "timeline-deadline";
  params.steps = 1000000;
  params.run_policy = "    activeDeadlineSeconds: 2\n";
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.timeline = dir / "job.trace.json";
  const RunOutcome outcome = RunManifest(options);
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_NE(outcome.out.find("(3 of 3 members"), std::string::npos) << outcome.out;
  const auto spans = SpansByMember(options.timeline);
  ASSERT_EQ(spans.size(), 3u);
  // Every member trained (or served) until the end and finished its file: many steps each.
  for (const char* worker : {"worker-0", "worker-1"}) {
    ASSERT_TRUE(spans.at(worker).contains("forward")) << worker;
    EXPECT_GT(spans.at(worker).at("forward"), 10) << worker;
  }
  int applies = 0;
  for (const auto& [name, count] : spans.at("ps-0")) applies += count;
  EXPECT_GT(applies, 10);
}

}  // namespace
}  // namespace autodist::launcher
