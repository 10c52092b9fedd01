// `autodist run --timeline FILE`: every member records its timeline and the launcher merges them
// into one trace with a process per member, for PS and all-reduce strategies.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "launcher/commands.h"
#include "runtime/common/error.h"
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
  // The report draws a few of those steps, every member in a lane.
  const std::string report = ReadText(dir / "logs/report.html");
  EXPECT_NE(report.find("<section id=\"timeline\">"), std::string::npos);
  EXPECT_NE(report.find(">worker-1 training</text>"), std::string::npos);
  EXPECT_NE(report.find("data-category=\"ps\""), std::string::npos);
}

// An AllReduce job of the parity MLP with its timeline recorded into `dir`; returns the merged
// trace's path. `adjust` changes the job first.
std::string RunAllReduceWithTimeline(const TempDir& dir, const std::string& name,
                                     const std::function<void(JobParams&)>& adjust) {
  JobParams params;
  params.name = name;
  params.builder = "AllReduce";
  params.parameter_servers = 0;
  adjust(params);
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.timeline = dir / "job.trace.json";
  const RunOutcome outcome = RunManifest(options);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  return options.timeline;
}

TEST(RunTimelineTest, AllReduceJobShowsGroupsAndTheirCollectives) {
  TempDir dir;
  const std::string trace = RunAllReduceWithTimeline(dir, "timeline-allreduce",
                                                     [](JobParams& params) { params.steps = 2; });
  ASSERT_FALSE(HasFailure());
  const auto spans = SpansByMember(trace);
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

// The overlap of communication with backward, from the recorded times: with a fusion group per
// variable (chunkSize 1), groups whose gradients backward has finished are reduced on the
// all-reduce thread while backward still runs on the training thread. The last group can only
// start once backward has handed out its last gradient, so two reductions starting within one
// backward span show that at least one group was sent while backward was still computing (with
// one group for the whole model there is never more than one). Over ten steps: on two busy cores
// a thread's wake-up may lag past a short backward now and then, not every time.
TEST(RunTimelineTest, AllReduceGroupsAreReducedWhileBackwardRuns) {
  TempDir dir;
  const std::string trace =
      RunAllReduceWithTimeline(dir, "timeline-overlap", [](JobParams& params) {
        params.strategy_options = "      chunkSize: 1\n";
        params.batch = 512;
        params.steps = 10;
      });
  ASSERT_FALSE(HasFailure());
  struct Interval {
    double start;
    double end;
  };
  std::map<int, std::vector<Interval>> backward;     // by member (pid)
  std::map<int, std::vector<double>> reduce_starts;  // by member
  const nlohmann::json events = nlohmann::json::parse(ReadText(trace));
  for (const auto& event : events.at("traceEvents")) {
    if (event.value("ph", "") != "X") continue;
    const std::string name = event.at("name").get<std::string>();
    const int pid = event.at("pid").get<int>();
    const double ts = event.at("ts").get<double>();
    if (name == "backward") backward[pid].push_back({ts, ts + event.at("dur").get<double>()});
    if (name.rfind("reduce group-", 0) == 0) reduce_starts[pid].push_back(ts);
  }
  ASSERT_EQ(backward.size(), 2U) << "a backward track per worker";
  int overlapped_steps = 0;
  for (const auto& [pid, intervals] : backward) {
    EXPECT_EQ(intervals.size(), 10U);
    for (const Interval& pass : intervals) {
      const auto within =
          std::count_if(reduce_starts[pid].begin(), reduce_starts[pid].end(),
                        [&](double start) { return start > pass.start && start < pass.end; });
      if (within >= 2) ++overlapped_steps;
    }
  }
  EXPECT_GT(overlapped_steps, 0) << "no group was reduced while backward was still computing";
}

TEST(RunTimelineTest, TheManifestsPathHoldsEveryMembersFileAndTheMergedTrace) {
  TempDir dir;
  JobParams params;
  params.name = "timeline-manifest";
  params.steps = 2;
  params.extra_training = "    timeline:\n      path: traces\n";  // relative to the manifest
  const cli::RunOptions options =
      OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err;
  const std::string traces = dir / "traces";
  const std::string merged = traces + "/job.trace.json";
  EXPECT_NE(outcome.out.find("timeline: " + merged + " (3 of 3 members"), std::string::npos)
      << outcome.out;
  for (const char* member : {"worker-0", "worker-1", "ps-0"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(traces + "/" + member + ".timeline.json"))
        << member;
  }
  const auto spans = SpansByMember(merged);
  EXPECT_EQ(spans.at("worker-1").at("forward"), 2);

  // `autodist timeline DIR -o FILE` merges the same files into the same trace (what a user does
  // with a cluster's volume), leaving out an earlier merge.
  std::ostringstream said;
  const std::string again = dir / "again.json";
  EXPECT_EQ(cli::RunTimelineMerge({traces, again}, said), 3);
  EXPECT_EQ(said.str(),
            "timeline: " + again + " (3 members: worker-0, worker-1, ps-0; open it in Perfetto)\n");
  EXPECT_EQ(SpansByMember(again), spans);

  // `autodist report` builds the page from the same files, as for a cluster job's volumes: the
  // event files (here the log folder's), the timelines and a strategy summary.
  std::ofstream(dir / "summary.txt") << "builder: PS\n";
  std::ostringstream reported;
  cli::ReportOptions report_options{dir / "logs/tensorboard", traces, dir / "summary.txt",
                                    "timeline-manifest", dir / "cluster-report.html"};
  cli::RunReportFromFiles(report_options, reported);
  EXPECT_NE(reported.str().find("report: " + dir / "cluster-report.html"), std::string::npos);
  const std::string page = ReadText(dir / "cluster-report.html");
  EXPECT_NE(page.find("<p class=\"outcome unknown\">recorded: 2 steps, 2 workers</p>"),
            std::string::npos)
      << page.substr(0, 3000);
  EXPECT_NE(page.find("<pre>builder: PS\n</pre>"), std::string::npos);
  const size_t loss_points = CountOccurrences(page, "data-series=\"train loss\" cx");
  EXPECT_EQ(loss_points, 2u);
  EXPECT_NE(page.find("<section id=\"timeline\">"), std::string::npos);
  EXPECT_NE(page.find("autodist_runtime_sent_bytes_total"), std::string::npos);  // no results

  // Nothing to report from: errors naming the directory.
  std::ostringstream ignored;
  cli::ReportOptions missing{dir / "nowhere", "", "", "", dir / "x.html"};
  EXPECT_THROW(cli::RunReportFromFiles(missing, ignored), Error);
  cli::ReportOptions empty{traces, "", "", "", dir / "x.html"};  // no event files there
  try {
    cli::RunReportFromFiles(empty, ignored);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("holds no worker's event files"), std::string::npos)
        << error.what();
  }
}

TEST(RunTimelineTest, TheTimelineCommandOrdersMembersAndRefusesWhatIsNotATimeline) {
  TempDir dir;
  const std::string one_span = R"([{"name":"s","ph":"X","ts":1,"dur":1,"pid":1,"tid":1}])";
  for (const char* member : {"worker-10", "ps-1", "worker-2", "zeta", "ps-0"}) {
    std::ofstream(dir / (std::string(member) + ".timeline.json")) << one_span;
  }
  std::ofstream(dir / "notes.txt") << "not a timeline, not taken";
  std::ostringstream said;
  EXPECT_EQ(cli::RunTimelineMerge({dir.path().string(), ""}, said), 5);
  EXPECT_NE(said.str().find("(5 members: worker-2, worker-10, ps-0, ps-1, zeta;"),
            std::string::npos)
      << said.str();
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "job.trace.json"));
  // Merging again leaves the earlier merged trace out.
  EXPECT_EQ(cli::RunTimelineMerge({dir.path().string(), ""}, said), 5);

  const auto message = [](const cli::TimelineMergeOptions& options) {
    std::ostringstream ignored;
    try {
      cli::RunTimelineMerge(options, ignored);
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({dir / "missing", ""})
                .find("timeline directory '" + dir / "missing" + "' does not exist"),
            std::string::npos);
  const std::string empty = dir / "empty";
  std::filesystem::create_directory(empty);
  EXPECT_NE(message({empty, ""}).find("holds no member timelines"), std::string::npos);
  std::ofstream(dir / "worker-3.timeline.json") << "{\"not\": \"a timeline\"}";
  EXPECT_NE(message({dir.path().string(), ""}).find("worker-3.timeline.json"), std::string::npos)
      << message({dir.path().string(), ""});
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
  // The report says why the job ended, and it shows the steps taken until then.
  const std::string report = ReadText(dir / "logs/report.html");
  EXPECT_NE(report.find("<p class=\"outcome failed\">failed: spec.runPolicy.activeDeadlineSeconds"),
            std::string::npos)
      << report.substr(0, 2000);
  EXPECT_NE(report.find("data-series=\"train loss\" cx"), std::string::npos);
}

}  // namespace
}  // namespace autodist::launcher
