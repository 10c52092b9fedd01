// `autodist run --metrics-port`: every member serves Prometheus /metrics while the job runs, with
// its own steps, traffic and parameter-server work, and says who it is.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "tests/launcher/run_job_test_util.h"
#include "tests/observe/http_get.h"

namespace autodist::launcher {
namespace {

// A base port with `count` free ports above it on 127.0.0.1 (asked of the kernel, then checked).
int FreePortRun(int count) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    const int base = ntohs(address.sin_port);
    bool free = base + count <= 65536;
    for (int i = 1; free && i < count; ++i) {
      const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in next = address;
      next.sin_port = htons(static_cast<uint16_t>(base + i));
      free = ::bind(probe, reinterpret_cast<sockaddr*>(&next), sizeof(next)) == 0;
      ::close(probe);
    }
    if (free) return base;
  }
  ADD_FAILURE() << "no run of " << count << " free ports";
  return 0;
}

// The value of the sample `series` (name and labels exactly as exposed), or -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  const std::string line_start = "\n" + series + " ";
  const size_t at = ("\n" + text).find(line_start);
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 1));
}

TEST(RunMetricsTest, EveryMemberServesItsOwnMetricsWhileTheJobRuns) {
  TempDir dir;
  JobParams params;
  params.name = "metrics-ps";
  params.steps = 1000000;
  // The job runs until its deadline stops it; the scraper is done long before.
  params.run_policy = "    activeDeadlineSeconds: 6\n";
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.metrics_port = FreePortRun(3);
  ASSERT_GT(options.metrics_port, 0);

  // Scrapes each member (worker-0, worker-1, ps-0 on base, +1, +2) until every one has shown
  // work done, keeping the last page of each.
  std::atomic<bool> run_over{false};
  std::map<std::string, std::string> pages;
  std::thread scraper([&] {
    const std::vector<std::string> members = {"worker-0", "worker-1", "ps-0"};
    while (!run_over.load()) {
      bool all = true;
      for (size_t i = 0; i < members.size(); ++i) {
        // Nothing yet while the member starts.
        const auto reply = testing::HttpGet(options.metrics_port + static_cast<int>(i), "/metrics");
        if (reply && reply->status == 200) pages[members[i]] = reply->body;
        const std::string& page = pages[members[i]];
        const bool busy = i < 2 ? Sample(page, "autodist_runtime_steps_total") >= 3
                                : Sample(page, "autodist_runtime_ps_updates_total") >= 3;
        all = all && busy;
      }
      if (all) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  const RunOutcome outcome = RunManifest(options);
  run_over = true;
  scraper.join();
  EXPECT_EQ(outcome.exit_code, 1);  // stopped by its deadline
  EXPECT_NE(outcome.out.find(
                fmt::format("metrics: worker-0 http://127.0.0.1:{}/metrics", options.metrics_port)),
            std::string::npos)
      << outcome.out;

  for (const char* worker : {"worker-0", "worker-1"}) {
    SCOPED_TRACE(worker);
    const std::string& page = pages[worker];
    const double steps = Sample(page, "autodist_runtime_steps_total");
    EXPECT_GE(steps, 3) << page;
    // A scrape is one consistent moment per counter, not across counters: the histogram's
    // count was read after the steps counter, so it can only be ahead.
    EXPECT_GE(Sample(page, "autodist_runtime_step_duration_seconds_count"), steps);
    EXPECT_GT(Sample(page, "autodist_runtime_step_duration_seconds_sum"), 0);
    EXPECT_GE(Sample(page, "autodist_runtime_samples_total"), steps * params.batch);
    EXPECT_GT(Sample(page, R"(autodist_runtime_sent_bytes_total{channel="parameter_server"})"), 0);
    EXPECT_GT(Sample(page, R"(autodist_runtime_received_bytes_total{channel="parameter_server"})"),
              0);
    EXPECT_EQ(Sample(page, R"(autodist_runtime_sent_bytes_total{channel="all_reduce"})"), 0);
    EXPECT_EQ(Sample(page, fmt::format(R"(autodist_runtime_member_info{{job="metrics-ps",)"
                                       R"(member="{}",role="worker"}})",
                                       worker)),
              1);
  }
  const std::string& ps = pages["ps-0"];
  EXPECT_GE(Sample(ps, "autodist_runtime_ps_updates_total"), 3) << ps;
  EXPECT_GT(Sample(ps, "autodist_runtime_ps_apply_duration_seconds_count"), 0);
  EXPECT_GE(Sample(ps, "autodist_runtime_ps_waiting_calls"), 0);
  EXPECT_GT(Sample(ps, R"(autodist_runtime_received_bytes_total{channel="parameter_server"})"), 0);
  EXPECT_EQ(Sample(ps, "autodist_runtime_steps_total"), 0);  // a server trains nothing
  EXPECT_EQ(Sample(ps, R"(autodist_runtime_member_info{job="metrics-ps",member="ps-0",role="ps"})"),
            1);
}

TEST(RunMetricsTest, PortsPastTheLastOneAreRefusedBeforeAnythingStarts) {
  TempDir dir;
  JobParams params;
  params.name = "metrics-ports";
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.metrics_port = 65534;  // three members need 65534..65536
  try {
    RunManifest(options);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("--metrics-port 65534: 3 members need ports up to "
                        "65536, past 65535"),
              std::string::npos)
        << error.what();
  }
  EXPECT_TRUE(ProcessesMentioning(dir.path().string()).empty());
}

}  // namespace
}  // namespace autodist::launcher
