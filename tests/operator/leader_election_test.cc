// Leader election between candidates sharing one Lease in the API-server double: one leads,
// a successor takes over after the lease expires (or at once after a release), and a leader
// that cannot renew steps down.
#include "operator/controller/leader_election.h"

#include <gtest/gtest.h>

#include <thread>

#include "operator/kube/api_error.h"
#include "runtime/common/error.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::controller {
namespace {

using kube::testing::Eventually;
using kube::testing::FakeCluster;
using std::chrono::milliseconds;

LeaderElectionConfig Config(const std::string& identity) {
  LeaderElectionConfig config;
  config.lease_namespace = "default";
  config.lease_name = "autodist-operator";
  config.identity = identity;
  config.lease_duration = std::chrono::seconds(1);  // the Lease holds whole seconds
  config.renew_deadline = milliseconds(500);
  config.retry_period = milliseconds(100);
  return config;
}

// An elector and the callbacks it made.
struct Candidate {
  Candidate(kube::Client& client, LeaderElectionConfig config)
      : elector(client, std::move(config),
                LeaderCallbacks{[this] { ++started; }, [this] { ++stopped; },
                                [this](const std::string&) { ++new_leader; }}) {}
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::atomic<int> new_leader{0};
  LeaderElector elector;
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  nlohmann::json Lease() {
    return client_->Get(kube::resources::kLeases, "default", "autodist-operator");
  }
  FakeCluster cluster_;
  std::unique_ptr<kube::Client> client_ = cluster_.NewClient();
};

TEST_F(LeaderElectionTest, OnlyOneLeadsAndTheOtherTakesOverAfterExpiry) {
  // a will die without releasing the lease (as a crashed process would).
  LeaderElectionConfig crashing = Config("a");
  crashing.release_on_stop = false;
  Candidate a(*client_, crashing);
  a.elector.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector.IsLeader(); }));
  Candidate b(*client_, Config("b"));
  b.elector.Start();
  // b keeps reading the lease, sees a renewing it, and stays a candidate.
  std::this_thread::sleep_for(milliseconds(1300));
  EXPECT_TRUE(a.elector.IsLeader());
  EXPECT_FALSE(b.elector.IsLeader());
  EXPECT_EQ(b.elector.leader(), "a");
  auto lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "a");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 0);
  const std::string acquired = lease["spec"]["acquireTime"];
  EXPECT_NE(lease["spec"]["renewTime"], acquired);  // renewed since, same term
  EXPECT_EQ(a.started, 1);

  // a stops renewing without a release: b must wait out the lease duration.
  const auto died = std::chrono::steady_clock::now();
  a.elector.Stop();
  EXPECT_EQ(a.stopped, 1);
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "a");
  ASSERT_TRUE(Eventually([&] { return b.elector.IsLeader(); }, std::chrono::seconds(5)));
  EXPECT_GE(std::chrono::steady_clock::now() - died, milliseconds(900));
  lease = Lease();
  EXPECT_EQ(lease["spec"]["holderIdentity"], "b");
  EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
  EXPECT_EQ(b.started, 1);
  EXPECT_EQ(a.started, 1);
}

TEST_F(LeaderElectionTest, ReleaseOnStopLetsTheSuccessorTakeOverAtOnce) {
  Candidate a(*client_, Config("a"));
  a.elector.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector.IsLeader(); }));
  Candidate b(*client_, Config("b"));
  b.elector.Start();
  ASSERT_TRUE(Eventually([&] { return b.elector.leader() == "a"; }));

  const auto released = std::chrono::steady_clock::now();
  a.elector.Stop();
  EXPECT_FALSE(a.elector.IsLeader());
  EXPECT_EQ(a.stopped, 1);
  ASSERT_TRUE(Eventually([&] { return b.elector.IsLeader(); }));
  // Well within the one-second lease: b did not wait for expiry.
  EXPECT_LT(std::chrono::steady_clock::now() - released, milliseconds(700));
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "b");
  b.elector.Stop();
  EXPECT_EQ(Lease()["spec"]["holderIdentity"], "");
}

TEST_F(LeaderElectionTest, LeaderThatCannotRenewStepsDown) {
  Candidate a(*client_, Config("a"));
  a.elector.Start();
  ASSERT_TRUE(Eventually([&] { return a.elector.IsLeader(); }));
  cluster_.InjectFailures(
      {{{"verb", "update"}, {"resource", "leases"}, {"code", 500}, {"count", 1000}}});
  ASSERT_TRUE(Eventually([&] { return a.elector.Lost(); }, std::chrono::seconds(3)));
  EXPECT_FALSE(a.elector.IsLeader());
  EXPECT_EQ(a.stopped, 1);
  a.elector.Stop();
  EXPECT_EQ(a.stopped, 1);  // not twice
}

TEST_F(LeaderElectionTest, ConcurrentCandidatesConflictAndOneWins) {
  std::vector<std::unique_ptr<Candidate>> candidates;
  for (int i = 0; i < 4; ++i) {
    candidates.push_back(std::make_unique<Candidate>(*client_, Config("c" + std::to_string(i))));
  }
  for (auto& c : candidates) c->elector.Start();
  ASSERT_TRUE(Eventually([&] {
    int leaders = 0;
    for (auto& c : candidates) leaders += c->elector.IsLeader() ? 1 : 0;
    return leaders == 1;
  }));
  std::this_thread::sleep_for(milliseconds(300));
  int leaders = 0;
  std::string leader;
  for (auto& c : candidates) {
    if (c->elector.IsLeader()) {
      ++leaders;
      leader = Lease()["spec"]["holderIdentity"];
    }
  }
  EXPECT_EQ(leaders, 1);
  for (auto& c : candidates) EXPECT_EQ(c->elector.leader(), leader);
}

TEST(LeaderElectionConfigTest, RejectsInconsistentDurations) {
  FakeCluster cluster;
  auto client = cluster.NewClient();
  auto config = Config("a");
  config.renew_deadline = config.lease_duration;
  EXPECT_THROW(LeaderElector(*client, config, {}), Error);
  config = Config("");
  EXPECT_THROW(LeaderElector(*client, config, {}), Error);
}

TEST(MicroTimeTest, MicrosecondsInUtc) {
  const auto t = std::chrono::system_clock::time_point(std::chrono::microseconds(1714564800123456));
  EXPECT_EQ(FormatMicroTime(t), "2024-05-01T12:00:00.123456Z");
}

}  // namespace
}  // namespace autodist::controller
