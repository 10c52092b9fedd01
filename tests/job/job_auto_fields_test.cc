// What Auto reads from a manifest: allowLossyCompression, the step profile (a path resolved
// against the manifest's directory, or a ConfigMap key) and each node's network bandwidth. They
// parse, write back, reach the compile request, and a local profile is read and checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/common/error.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "runtime/job/job_writer.h"
#include "tests/error_of.h"
#include "tests/job/job_test_support.h"
#include "tests/strategy/test_support.h"

namespace autodist::job {
namespace {

using autodist::testing::ErrorOf;
using ::testing::HasSubstr;
using testing::kJobFixtures;
using testing::ReadText;

// minimal.yaml with `strategy` and `resources` lines appended under spec.
JobSpec Minimal(const std::string& strategy, const std::string& resources,
                const std::string& dir = "/jobs") {
  std::string text = ReadText(kJobFixtures + "/minimal.yaml");
  text += "  strategy:\n" + strategy + "  resources:\n" + resources;
  return ParseJob(text, "job.yaml", dir);
}

TEST(JobAutoFieldsTest, ParseWriteBackAndReachTheCompileRequest) {
  const JobSpec job = Minimal(
      "    builder: Auto\n    allowLossyCompression: true\n    profile: {path: p/profile.json}\n",
      "    workers: 2\n    networkBandwidthGbps: 2.5\n");
  EXPECT_TRUE(job.strategy.allow_lossy_compression);
  ASSERT_TRUE(job.strategy.profile.has_value());
  EXPECT_EQ(job.strategy.profile->path, "/jobs/p/profile.json");
  EXPECT_EQ(job.resources.network_bandwidth_gbps, 2.5);
  const JobSpec again = ParseJob(JobToYaml(job), "again.yaml", "/jobs");
  EXPECT_EQ(again, job) << JobToYaml(job);

  const strategy::CompileRequest request = ToCompileRequest(job, std::nullopt);
  EXPECT_TRUE(request.allow_lossy_compression);
  EXPECT_EQ(request.batch_per_replica, job.data.batch_size_per_replica);
  const strategy::ResourceSpec resources =
      strategy::ResourceSpec::FromReplicaCounts(ToReplicaCounts(job));
  for (const strategy::NodeSpec& node : resources.nodes()) EXPECT_EQ(node.network_bandwidth, 2.5);

  const JobSpec cluster = Minimal(
      "    builder: Auto\n    profile:\n      configMap: {name: prof}\n", "    workers: 1\n");
  ASSERT_TRUE(cluster.strategy.profile->config_map.has_value());
  EXPECT_EQ(cluster.strategy.profile->config_map->key, "profile.json");
  EXPECT_EQ(ParseJob(JobToYaml(cluster), "again.yaml", "/jobs"), cluster);
  // Defaults are not written out.
  const std::string plain = JobToYaml(Minimal("    builder: Auto\n", "    workers: 1\n"));
  EXPECT_EQ(plain.find("allowLossyCompression"), std::string::npos);
  EXPECT_EQ(plain.find("networkBandwidthGbps"), std::string::npos);
}

// The GPU pods' fields: /dev/shm's size and NCCL's settings parse, write back and become the
// environment NCCL reads, the manifest's settings ahead of a fallback's (the operator's).
TEST(JobAutoFieldsTest, SharedMemoryAndNcclSettingsRoundTripAndBecomeTheEnvironment) {
  const JobSpec job = Minimal("    builder: AllReduce\n",
                              "    workers: 2\n    gpusPerWorker: 1\n    sharedMemory: 2Gi\n"
                              "    nccl: {socketIfname: \"^docker,lo\", ibDisable: false}\n");
  EXPECT_EQ(job.resources.shared_memory, "2Gi");
  EXPECT_EQ(job.resources.nccl.socket_ifname, "^docker,lo");
  EXPECT_EQ(job.resources.nccl.debug, "");
  EXPECT_EQ(job.resources.nccl.ib_disable, false);
  EXPECT_EQ(ParseJob(JobToYaml(job), "again.yaml", "/jobs"), job) << JobToYaml(job);

  using Environment = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(NcclEnvironment(job.resources.nccl),
            (Environment{{"NCCL_SOCKET_IFNAME", "^docker,lo"}, {"NCCL_IB_DISABLE", "0"}}));
  const NcclSpec fallback{"eth0", "WARN", true};
  EXPECT_EQ(
      NcclEnvironment(job.resources.nccl, fallback),
      (Environment{
          {"NCCL_SOCKET_IFNAME", "^docker,lo"}, {"NCCL_DEBUG", "WARN"}, {"NCCL_IB_DISABLE", "0"}}));
  EXPECT_EQ(NcclEnvironment(NcclSpec{}), Environment{});

  const std::string plain = JobToYaml(Minimal("    builder: AllReduce\n", "    workers: 1\n"));
  EXPECT_EQ(plain.find("sharedMemory"), std::string::npos);
  EXPECT_EQ(plain.find("nccl"), std::string::npos);
}

TEST(JobAutoFieldsTest, NcclSettingsAcceptWhatNcclReads) {
  for (const char* good : {"eth0", "=eth0", "^docker,lo", "ens1f0.100", "eth0:1", "ib"}) {
    EXPECT_TRUE(IsNcclSocketIfname(good)) << good;
  }
  for (const char* bad : {"", "^", "eth0,", ",eth0", "eth0,,lo", "eth 0", "eth0;lo", "^^eth0"}) {
    EXPECT_FALSE(IsNcclSocketIfname(bad)) << bad;
  }
  for (const char* level : {"VERSION", "WARN", "INFO", "TRACE"})
    EXPECT_TRUE(IsNcclDebugLevel(level));
  for (const char* level : {"", "info", "DEBUG", "WARN "}) EXPECT_FALSE(IsNcclDebugLevel(level));
}

TEST(JobAutoFieldsTest, ALocalProfileIsReadAndCheckedAgainstTheJob) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("autodist-auto-fields-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::vector<graph::Variable> variables = {
      strategy::testing::FloatVariable("fc.weight", {10, 784})};
  const JobSpec job = Minimal("    builder: Auto\n    profile: {path: profile.json}\n",
                              "    workers: 2\n", dir.string());
  // Missing: NotFound naming the file.
  const Error missing = ErrorOf([&] { ReadLocalProfile(job, variables); });
  EXPECT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_THAT(missing.what(), HasSubstr((dir / "profile.json").string()));
  // Another batch than the job's: refused with both numbers.
  strategy::StepProfile profile = strategy::EstimateStepProfile(variables, 7, 1, false);
  std::ofstream(dir / "profile.json") << strategy::StepProfileToJson(profile);
  EXPECT_THAT(ErrorOf([&] { ReadLocalProfile(job, variables); }).what(),
              HasSubstr(fmt::format("measured at 7 samples per replica, the job has {}",
                                    job.data.batch_size_per_replica)));
  profile = strategy::EstimateStepProfile(variables, job.data.batch_size_per_replica, 1, false);
  std::ofstream(dir / "profile.json") << strategy::StepProfileToJson(profile);
  EXPECT_EQ(ReadLocalProfile(job, variables), profile);
  // No profile named: none.
  EXPECT_EQ(ReadLocalProfile(Minimal("    builder: Auto\n", "    workers: 1\n"), variables),
            std::nullopt);
  // A ConfigMap profile is the operator's to read.
  const JobSpec cluster =
      Minimal("    builder: Auto\n    profile: {configMap: {name: prof}}\n", "    workers: 1\n");
  EXPECT_THAT(ErrorOf([&] { ReadLocalProfile(cluster, variables); }).what(),
              HasSubstr("spec.strategy.profile.configMap (prof/profile.json) is read by the "
                        "operator in a cluster"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace autodist::job
