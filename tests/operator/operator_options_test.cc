// The operator's flags as the Helm chart passes them, and the bad values each is refused with.
#include "operator/app/operator_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::app {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

OperatorOptions Parse(std::vector<std::string> args) {
  CLI::App app;
  OperatorOptions options;
  AddOperatorFlags(app, options);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  FinishOperatorOptions(options);
  return options;
}

std::string ErrorOf(std::vector<std::string> args) {
  try {
    Parse(std::move(args));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "expected an autodist::Error";
  return "";
}

TEST(OperatorOptionsTest, TheChartsFlagsParse) {
  const OperatorOptions options = Parse(
      {"--namespaces=team-a,team-b", "--workers=8", "--log-format=json", "--leader-elect=true",
       "--leader-election-namespace=autodist-system", "--lease-duration=15s",
       "--renew-deadline=10s", "--retry-period=2s", "--metrics-bind-address=:8080",
       "--runtime-image=r/runtime:1", "--gang-scheduling=volcano", "--progress-interval=500ms"});
  EXPECT_THAT(options.namespaces, ElementsAre("team-a", "team-b"));
  EXPECT_EQ(options.workers, 8);
  EXPECT_TRUE(options.leader_elect);
  EXPECT_EQ(options.lease_duration, std::chrono::seconds(15));
  EXPECT_EQ(options.renew_deadline, std::chrono::seconds(10));
  EXPECT_EQ(options.progress_interval, std::chrono::milliseconds(500));
  EXPECT_EQ(options.reconciler.runtime_image, "r/runtime:1");
  EXPECT_EQ(options.reconciler.gang_scheduler, reconcile::GangScheduler::kVolcano);
  EXPECT_EQ(options.reconciler.addresses.host_template,
            reconcile::AddressPolicy::Cluster().host_template);
}

TEST(OperatorOptionsTest, NoNamespacesMeansEveryNamespace) {
  EXPECT_TRUE(Parse({}).namespaces.empty());
  EXPECT_THAT(Parse({"--namespaces=a,,b"}).namespaces, ElementsAre("a", "b"));
  // A flag with no value at all is a mistake the parser names, not "every namespace".
  try {
    Parse({"--namespaces="});
    ADD_FAILURE() << "an empty --namespaces was accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--namespaces"));
  }
}

TEST(OperatorOptionsTest, HttpThreadsDefaultToTwoAndAreBounded) {
  EXPECT_EQ(Parse({}).http_threads, 2);
  EXPECT_EQ(Parse({"--http-threads=6"}).http_threads, 6);
  for (const std::string bad : {"--http-threads=0", "--http-threads=65"}) {
    try {
      Parse({bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const CLI::ParseError& e) {
      EXPECT_THAT(e.what(), HasSubstr("--http-threads")) << bad;
    }
  }
}

TEST(OperatorOptionsTest, LocalProcessesGiveEachMemberItsOwnPortOnLoopback) {
  const OperatorOptions options = Parse({"--address-mode=local-processes"});
  EXPECT_EQ(options.reconciler.addresses.ports, reconcile::AddressPolicy::Ports::kPerMember);
}

TEST(OperatorOptionsTest, DurationsAcceptSecondsMillisecondsAndMinutes) {
  EXPECT_EQ(ParseDuration("x", "2m"), std::chrono::minutes(2));
  EXPECT_EQ(ParseDuration("x", "250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(ParseDuration("x", "7"), std::chrono::seconds(7));
}

TEST(OperatorOptionsTest, BadValuesNameTheFlag) {
  EXPECT_THAT(ErrorOf({"--lease-duration=soon"}),
              HasSubstr("--lease-duration: expected a duration such as 15s"));
  EXPECT_THAT(ErrorOf({"--retry-period=5h"}), HasSubstr("--retry-period"));
  EXPECT_THAT(ErrorOf({"--lease-duration=5s", "--renew-deadline=10s"}),
              HasSubstr("--renew-deadline (10000 ms) must be shorter than --lease-duration"));
  EXPECT_THAT(ErrorOf({"--gang-scheduling=kube-batch"}), HasSubstr("kube-batch"));
  EXPECT_THAT(ErrorOf({"--nccl-socket-ifname=eth 0"}),
              HasSubstr("--nccl-socket-ifname: expected interface name prefixes"));
  EXPECT_THAT(ErrorOf({"--nccl-debug=LOUD"}),
              HasSubstr("--nccl-debug: expected one of VERSION, WARN, INFO, TRACE, got 'LOUD'"));
}

// The chart's GPU image and NCCL values, and what the pods get without them.
TEST(OperatorOptionsTest, GpuImageAndNcclFlags) {
  const OperatorOptions defaults = Parse({});
  EXPECT_EQ(defaults.reconciler.runtime_gpu_image, "autodist/autodist-runtime-cuda:0.1.0");
  EXPECT_EQ(defaults.reconciler.nccl, (job::NcclSpec{"eth0", "WARN", true}));
  const OperatorOptions options =
      Parse({"--runtime-gpu-image=r/runtime-cuda:2", "--nccl-socket-ifname=^docker,lo",
             "--nccl-debug=INFO", "--nccl-ib-disable=false"});
  EXPECT_EQ(options.reconciler.runtime_gpu_image, "r/runtime-cuda:2");
  EXPECT_EQ(options.reconciler.nccl, (job::NcclSpec{"^docker,lo", "INFO", false}));
}

}  // namespace
}  // namespace autodist::app
