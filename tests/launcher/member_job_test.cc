// The manifest a job member runs with: --resume (the operator's flag for the pods of a gang
// restart or a resume) switches the checkpoint's resume on over the manifest's `resume: false`,
// and is refused, naming the file, for a manifest without a checkpoint.
#include <gtest/gtest.h>

#include <string>

#include "runtime/cli/job_member.h"
#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::cli {
namespace {

const std::string kJobs = std::string(AUTODIST_FIXTURES_DIR) + "/jobs/";

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

}  // namespace
}  // namespace autodist::cli
