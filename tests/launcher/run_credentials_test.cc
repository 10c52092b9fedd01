// Job identity on a laptop: `autodist run` makes a CA for the run and credentials per member
// (run_credentials.h); a member refuses to start without credentials that are its own, unless
// told --insecure; and TLS changes nothing of what a job computes.
#include "launcher/run_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/security/job_credentials.h"
#include "runtime/security/peer_check.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(RunCredentialsTest, APrivateDirectoryPerMemberOfOneCaRemovedWithTheRun) {
  std::string root;
  {
    const cli::RunCredentials credentials("job", {"worker-0", "ps-0"});
    root = fs::path(credentials.DirectoryOf("worker-0")).parent_path().string();
    struct stat info {};
    ASSERT_EQ(stat(root.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700) << root;
    const security::JobCredentials worker =
        security::LoadCredentials(credentials.DirectoryOf("worker-0"));
    const security::JobCredentials ps = security::LoadCredentials(credentials.DirectoryOf("ps-0"));
    EXPECT_EQ(worker.member, "worker-0");
    EXPECT_EQ(ps.member, "ps-0");
    EXPECT_EQ(credentials.launcher()->member, cli::kLauncherMember);
    EXPECT_EQ(security::PeerCheck(worker.ca, "ca").CheckChain(credentials.launcher()->certificate),
              std::nullopt);
    // Another run is another CA: its members cannot talk to this one's.
    const cli::RunCredentials other("job", {"worker-0"});
    EXPECT_NE(security::PeerCheck(worker.ca, "ca")
                  .CheckChain(security::LoadCredentials(other.DirectoryOf("worker-0")).certificate),
              std::nullopt);
  }
  EXPECT_FALSE(fs::exists(root)) << "the run's keys outlived it";
}

struct Exit {
  int code = -1;
  std::string err;
};

Exit RunRuntime(const TempDir& dir, const std::string& arguments) {
  const std::string err = dir / "runtime.err";
  const std::string command = std::string(AUTODIST_BIN_DIR) + "/autodist-runtime " + arguments +
                              " > /dev/null 2> " + err + " < /dev/null";
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadText(err)};
}

TEST(RunCredentialsTest, AMemberStartsOnlyWithItsOwnCredentialsOrInsecureOnPurpose) {
  TempDir dir;
  const std::string manifest = WriteManifest(dir, JobYaml(JobParams{}, dir / "ckpt"));
  const std::string member = "--job " + manifest + " --node worker-0 --coordinator 127.0.0.1:1 ";
  Exit exit = RunRuntime(dir, member);
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("--job needs --tls-dir DIR, the member's credentials (ca.crt, "
                                  "tls.crt and tls.key"));
  EXPECT_THAT(exit.err, HasSubstr("or --insecure to run without authentication"));

  const cli::RunCredentials credentials("parity", {"worker-0", "ps-0"});
  exit = RunRuntime(dir, member + "--tls-dir " + credentials.DirectoryOf("ps-0"));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("the certificate is member 'ps-0''s, but this is --node "
                                  "worker-0"));

  exit = RunRuntime(dir, member + "--tls-dir " + (dir / "nowhere"));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err,
              HasSubstr("credentials directory '" + (dir / "nowhere") + "' does not exist"));

  exit = RunRuntime(dir, member + "--insecure --tls-dir " + credentials.DirectoryOf("worker-0"));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("--insecure and --tls-dir exclude each other"));
}

TEST(RunCredentialsTest, TlsAndPlaintextRunsComputeTheSameBits) {
  TempDir dir;
  JobParams params;
  params.steps = 4;
  const std::string tls_ckpt = dir / "tls";
  const std::string plain_ckpt = dir / "plain";
  cli::RunOptions tls = OptionsFor(dir, WriteManifest(dir, JobYaml(params, tls_ckpt)));
  const RunOutcome secured = RunManifest(tls);
  ASSERT_EQ(secured.exit_code, 0) << secured.err;
  EXPECT_THAT(secured.err, ::testing::Not(HasSubstr("--insecure")));
  const std::string plain_manifest = dir / "plain.yaml";
  std::ofstream(plain_manifest) << JobYaml(params, plain_ckpt);
  cli::RunOptions plain = OptionsFor(dir, plain_manifest);
  plain.insecure = true;
  const RunOutcome unsecured = RunManifest(plain);
  ASSERT_EQ(unsecured.exit_code, 0) << unsecured.err;
  EXPECT_THAT(unsecured.err, HasSubstr("--insecure: the members talk plaintext"));
  ExpectSameVariables(CheckpointVariables(tls_ckpt), CheckpointVariables(plain_ckpt), 0.0);
}

}  // namespace
}  // namespace autodist::launcher
