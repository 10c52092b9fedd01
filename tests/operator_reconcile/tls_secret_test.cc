// The job's TLS Secret (tls_secret.h): its CA and a pair per member and for the operator, made
// once before the pods that mount it; the pods' credentials; the operator's own for progress.
#include "operator/reconcile/tls_secret.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/reconcile/names.h"
#include "reconcile_test_support.h"
#include "runtime/common/base64.h"
#include "runtime/security/peer_check.h"

namespace autodist::reconcile {
namespace {

using testing::At;
using testing::Cluster;
using testing::Created;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::JobObject;

std::string Data(const nlohmann::json& secret, const std::string& key) {
  return DecodeBase64(secret["data"][key].get<std::string>()).value_or("");
}

TEST(TlsSecretTest, OneCaAndAPairPerMemberAndTheOperatorMadeBeforeThePods) {
  Cluster cluster(JobObject());
  const Plan plan = cluster.Reconcile(At(0));
  std::vector<std::string> kinds;
  for (const nlohmann::json& object : plan.creates) kinds.push_back(object["kind"]);
  const auto secret_at = std::find(kinds.begin(), kinds.end(), "Secret");
  const auto first_pod = std::find(kinds.begin(), kinds.end(), "Pod");
  ASSERT_NE(secret_at, kinds.end());
  EXPECT_LT(secret_at, first_pod) << "pods mount the Secret: it comes first";
  ASSERT_TRUE(cluster.tls_secret().has_value());
  const nlohmann::json& secret = *cluster.tls_secret();
  EXPECT_EQ(secret["metadata"]["name"], "fmnist-tls");
  EXPECT_EQ(secret["type"], "Opaque");
  std::vector<std::string> keys;
  for (const auto& [key, value] : secret["data"].items()) keys.push_back(key);
  EXPECT_THAT(
      keys, ElementsAre("ca.crt", "ca.key", "operator.crt", "operator.key", "ps-0.crt", "ps-0.key",
                        "worker-0.crt", "worker-0.key", "worker-1.crt", "worker-1.key"));
  const security::PeerCheck check(Data(secret, "ca.crt"), "ca.crt");
  for (const std::string member : {"worker-0", "worker-1", "ps-0", "operator"}) {
    SCOPED_TRACE(member);
    security::JobCredentials credentials{"",
                                         Data(secret, "ca.crt"),
                                         Data(secret, member + ".crt"),
                                         Data(secret, member + ".key"),
                                         {}};
    EXPECT_EQ(security::CheckedCredentials(credentials, "secret").member, member);
  }
  // Once it exists its keys never change under the running pods.
  EXPECT_THAT(Created(cluster.Reconcile(At(1)), "Secret"), IsEmpty());
  EXPECT_EQ(*cluster.tls_secret(), secret);
}

TEST(TlsSecretTest, TheCacheKeepsNoMembersPrivateKey) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  const nlohmann::json slim = SlimTlsSecret(*cluster.tls_secret());
  EXPECT_EQ(slim["data"]["worker-0.key"], "");
  EXPECT_EQ(slim["data"]["ca.key"], "");
  EXPECT_EQ(slim["data"]["operator.key"], (*cluster.tls_secret())["data"]["operator.key"]);
  EXPECT_EQ(slim["metadata"]["name"], "fmnist-tls");
  EXPECT_NE(OperatorCredentials(slim), nullptr);
}

TEST(TlsSecretTest, TheOperatorReadsProgressWithItsOwnCertificateOnceTheSecretIsSeen) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  cluster.SetAllPhases("Running");
  const Plan running = cluster.Reconcile(At(1));
  ASSERT_TRUE(running.coordinator.has_value());
  ASSERT_NE(running.coordinator_credentials, nullptr);
  EXPECT_EQ(running.coordinator_credentials->member, kOperatorMember);
  // Without the Secret (deleted behind the operator's back) there is nothing to read with: the
  // coordinator is not polled, and a new Secret is made.
  cluster.tls_secret().reset();
  const Plan without = cluster.Reconcile(At(2), false);
  EXPECT_FALSE(without.coordinator.has_value());
  EXPECT_THAT(Created(without, "Secret"), ElementsAre("fmnist-tls"));
}

TEST(TlsSecretTest, AnotherOwnersSecretOfTheSameNameIsNeverUsed) {
  Cluster cluster(JobObject());
  cluster.Reconcile(At(0));
  (*cluster.tls_secret())["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  cluster.SetAllPhases("Running");
  const Plan plan = cluster.Reconcile(At(1), false);
  // Treated as missing: the create meets its name (the controller reports the holder), and its
  // keys never reach the progress reader.
  EXPECT_THAT(Created(plan, "Secret"), ElementsAre("fmnist-tls"));
  EXPECT_FALSE(plan.coordinator.has_value());
}

TEST(TlsSecretTest, WithoutJobTlsThePodsRunInsecureAndNoSecretIsMade) {
  ReconcilerOptions options = testing::TestOptions();
  options.tls.enabled = false;
  Cluster cluster(JobObject(), options);
  const Plan plan = cluster.Reconcile(At(0));
  EXPECT_THAT(Created(plan, "Secret"), IsEmpty());
  const nlohmann::json& pod = cluster.pod("fmnist-worker-0");
  const nlohmann::json& args = pod["spec"]["containers"][0]["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--insecure"), args.end()) << args.dump();
  EXPECT_EQ(std::find(args.begin(), args.end(), "--tls-dir"), args.end()) << args.dump();
  for (const nlohmann::json& volume : pod["spec"]["volumes"]) {
    EXPECT_NE(volume["name"], kTlsVolume);
  }
  cluster.SetAllPhases("Running");
  const Plan running = cluster.Reconcile(At(1));
  EXPECT_TRUE(running.coordinator.has_value());
  EXPECT_EQ(running.coordinator_credentials, nullptr);
}

}  // namespace
}  // namespace autodist::reconcile
