// A job's CA, its members' credentials on disk, and the check a peer makes of a certificate.
#include "runtime/security/certificate_authority.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "runtime/common/error.h"
#include "runtime/security/job_credentials.h"
#include "runtime/security/peer_check.h"
#include "tests/error_of.h"

namespace autodist::security {
namespace {

using std::chrono::hours;
using std::chrono::system_clock;
using ::testing::HasSubstr;

namespace fs = std::filesystem;

Validity Expired() { return {system_clock::now() - hours(48), system_clock::now() - hours(24)}; }

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("autodist-security-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The message of the Error `body` throws.
std::string ErrorOf(const std::function<void()>& body) { return testing::ErrorOf(body).what(); }

TEST(CertificateAuthority, IssuesCredentialsNamedAfterTheMemberThatPassTheJobsCheck) {
  const auto authority = CertificateAuthority::Create("team-a/mnist", Validity::For(hours(1)));
  const JobCredentials issued = authority.Issue("worker-3", Validity::For(hours(1)));
  EXPECT_EQ(issued.ca, authority.certificate());
  const JobCredentials checked = CheckedCredentials(issued, "issued");
  EXPECT_EQ(checked.member, "worker-3");
  EXPECT_GT(checked.not_after, system_clock::now());
  EXPECT_LT(checked.not_after, system_clock::now() + hours(2));
  EXPECT_EQ(PeerCheck(authority.certificate(), "ca").CheckChain(issued.certificate), std::nullopt);
  // The CA can be taken up again from its PEM (the operator's Secret) and issues alike.
  const auto again = CertificateAuthority::FromPem(authority.certificate(), authority.key(), "s");
  EXPECT_EQ(PeerCheck(authority.certificate(), "ca")
                .CheckChain(again.Issue("ps-0", Validity::For(hours(1))).certificate),
            std::nullopt);
}

TEST(PeerCheck, RefusesAnotherJobsAForgedAndAnExpiredCertificate) {
  const auto authority = CertificateAuthority::Create("team-a/mnist", Validity::For(hours(1)));
  const PeerCheck check(authority.certificate(), "ca.crt");
  const auto other = CertificateAuthority::Create("team-b/mnist", Validity::For(hours(1)));
  EXPECT_THAT(check.CheckChain(other.Issue("worker-0", Validity::For(hours(1))).certificate)
                  .value_or("passed"),
              HasSubstr("the certificate of 'worker-0' is not issued by this job's CA"));
  // Same CA name, another key: what someone who knows the job's name could make.
  const auto forged = CertificateAuthority::Create("team-a/mnist", Validity::For(hours(1)));
  EXPECT_THAT(check.CheckChain(forged.Issue("ps-0", Validity::For(hours(1))).certificate)
                  .value_or("passed"),
              HasSubstr("is not issued by this job's CA"));
  EXPECT_THAT(
      check.CheckChain(authority.Issue("worker-1", Expired()).certificate).value_or("passed"),
      HasSubstr("the certificate of 'worker-1' has expired"));
  EXPECT_THAT(check.CheckChain("not a certificate").value_or("passed"),
              HasSubstr("expected a PEM certificate"));
}

TEST(JobCredentials, WrittenAndLoadedBackWithAPrivateKeyFile) {
  TempDir dir;
  const auto authority = CertificateAuthority::Create("local/job", Validity::For(hours(1)));
  const JobCredentials issued = authority.Issue("ps-1", Validity::For(hours(1)));
  WriteCredentials(dir.path().string(), issued);
  struct stat key {};
  ASSERT_EQ(stat((dir.path() / kKeyFile).c_str(), &key), 0);
  EXPECT_EQ(key.st_mode & 0777, 0600);
  struct stat directory {};
  ASSERT_EQ(stat(dir.path().c_str(), &directory), 0);
  EXPECT_EQ(directory.st_mode & 0777, 0700);
  const JobCredentials loaded = LoadCredentials(dir.path().string());
  EXPECT_EQ(loaded.member, "ps-1");
  EXPECT_EQ(loaded.certificate, issued.certificate);
  EXPECT_EQ(loaded.key, issued.key);
}

TEST(JobCredentials, BadDirectoriesAreRefusedNamingTheFileAndTheProblem) {
  TempDir dir;
  const std::string root = dir.path().string();
  EXPECT_THAT(ErrorOf([&] { LoadCredentials(root); }),
              HasSubstr("credentials directory '" + root + "' does not exist"));
  const auto authority = CertificateAuthority::Create("local/job", Validity::For(hours(1)));
  const JobCredentials issued = authority.Issue("worker-0", Validity::For(hours(1)));
  WriteCredentials(root, issued);
  fs::remove(dir.path() / kKeyFile);
  EXPECT_THAT(ErrorOf([&] { LoadCredentials(root); }), HasSubstr(kKeyFile));

  // Another member's key.
  JobCredentials mixed = issued;
  mixed.key = authority.Issue("worker-1", Validity::For(hours(1))).key;
  WriteCredentials(root, mixed);
  EXPECT_THAT(ErrorOf([&] { LoadCredentials(root); }),
              HasSubstr("tls.key is not the private key of tls.crt"));

  // Another job's CA beside the certificate.
  JobCredentials foreign = issued;
  foreign.ca = CertificateAuthority::Create("local/other", Validity::For(hours(1))).certificate();
  WriteCredentials(root, foreign);
  EXPECT_THAT(ErrorOf([&] { LoadCredentials(root); }),
              HasSubstr("tls.crt fails its own job's check: the certificate of 'worker-0' is "
                        "not issued by this job's CA"));

  WriteCredentials(root, authority.Issue("worker-0", Expired()));
  EXPECT_THAT(ErrorOf([&] { LoadCredentials(root); }), HasSubstr("has expired"));

  JobCredentials garbage = issued;
  garbage.certificate = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
  WriteCredentials(root, garbage);
  EXPECT_THAT(ErrorOf([&] { LoadCredentials(root); }),
              HasSubstr(root + "/tls.crt: expected a PEM certificate"));
}

// Kubernetes allows 63 characters for a namespace and as many for a job's name; X.509 only 64
// for a common name. The CA is named by a shortened label; a member's name, its identity, must
// fit whole.
TEST(CertificateAuthority, TheLongestJobAndMemberNamesStillMakeCertificates) {
  const std::string namespace_name(63, 'n');
  const std::string job(63, 'j');
  const auto authority =
      CertificateAuthority::Create(namespace_name + "/" + job, Validity::For(hours(1)));
  const auto other =
      CertificateAuthority::Create(namespace_name + "/" + job + "x", Validity::For(hours(1)));
  EXPECT_NE(authority.certificate(), other.certificate());
  const std::string member = "worker-" + std::string(57, '1');  // 64 characters
  const JobCredentials issued = authority.Issue(member, Validity::For(hours(1)));
  EXPECT_EQ(CheckedCredentials(issued, "issued").member, member);
  EXPECT_EQ(PeerCheck(authority.certificate(), "ca").CheckChain(issued.certificate), std::nullopt);
  EXPECT_THAT(ErrorOf([&] { authority.Issue(member + "2", Validity::For(hours(1))); }),
              HasSubstr("a member name for a certificate has at most 64 characters"));
}

TEST(CertificateAuthority, RefusesMemberNamesThatCannotBeASubject) {
  const auto authority = CertificateAuthority::Create("local/job", Validity::For(hours(1)));
  EXPECT_THAT(ErrorOf([&] { authority.Issue("", Validity::For(hours(1))); }),
              HasSubstr("a member name for a certificate must be non-empty"));
  EXPECT_THAT(ErrorOf([&] { authority.Issue("a/b", Validity::For(hours(1))); }),
              HasSubstr("got 'a/b'"));
  EXPECT_THAT(ErrorOf([&] {
                CertificateAuthority::FromPem(
                    authority.certificate(),
                    CertificateAuthority::Create("x", Validity::For(hours(1))).key(),
                    "Secret job-tls");
              }),
              HasSubstr("Secret job-tls: the CA key is not the CA certificate's"));
}

}  // namespace
}  // namespace autodist::security
