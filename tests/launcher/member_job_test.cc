// The manifest a job member runs with: --resume (the operator's flag for the pods of a gang
// restart or a resume) switches the checkpoint's resume on over the manifest's `resume: false`,
// and is refused, naming the file, for a manifest without a checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/cli/job_member.h"
#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::cli {
namespace {

const std::string kJobs = std::string(AUTODIST_FIXTURES_DIR) + "/jobs/";

std::string ReadText(const std::string& path) {
  std::ostringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(MemberJobTest, ResumeOverridesTheManifestsResumeOff) {
  MemberOptions options;
  options.job_file = kJobs + "full.yaml";
  ASSERT_FALSE(LoadMemberJob(options).training.checkpoint->resume);  // as the file says
  options.resume = true;
  const job::JobSpec job = LoadMemberJob(options);
  ASSERT_TRUE(job.training.checkpoint.has_value());
  EXPECT_TRUE(job.training.checkpoint->resume);
  EXPECT_EQ(job.training.checkpoint->interval_steps, 500);  // the rest as written
}

TEST(MemberJobTest, ResumeWithoutACheckpointIsRefused) {
  MemberOptions options;
  options.job_file = kJobs + "minimal.yaml";
  EXPECT_FALSE(LoadMemberJob(options).training.checkpoint.has_value());
  options.resume = true;
  const Error thrown = testing::ErrorOf([&] { LoadMemberJob(options); });
  EXPECT_EQ(thrown.code(), ErrorCode::kInvalidArgument);
  const std::string error = thrown.what();
  EXPECT_NE(error.find("--resume: "), std::string::npos) << error;
  EXPECT_NE(error.find("minimal.yaml has no spec.training.checkpoint"), std::string::npos) << error;
}

// `autodist run --network` tells the members its links' rate; a rate the manifest states wins.
TEST(MemberJobTest, TheRunsLinkRateFillsInAnUnstatedBandwidth) {
  MemberOptions options;
  options.job_file = kJobs + "minimal.yaml";
  EXPECT_FALSE(LoadMemberJob(options).resources.network_bandwidth_gbps.has_value());
  options.network_bandwidth_gbps = 2.5;
  EXPECT_EQ(LoadMemberJob(options).resources.network_bandwidth_gbps, 2.5);
  // A manifest that states 25: its own rate wins.
  const std::string stated = ::testing::TempDir() + "/member-job-bandwidth.yaml";
  std::ofstream(stated) << ReadText(kJobs + "minimal.yaml")
                        << "  resources:\n    networkBandwidthGbps: 25\n";
  options.job_file = stated;
  EXPECT_EQ(LoadMemberJob(options).resources.network_bandwidth_gbps, 25);
  std::filesystem::remove(stated);
}

}  // namespace
}  // namespace autodist::cli
