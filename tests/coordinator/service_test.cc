// The coordinator over real gRPC: one service on 127.0.0.1:0 and every member as a client thread
// in this process. Rendezvous, barriers, heartbeats and deadlines, finish/abort, progress and
// status, shutdown. Tensor transfers are in coordinator_streams_test.cc.
#include "runtime/coordinator/service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>

#include "runtime/coordinator/client.h"
#include "runtime/rpc/grpc_helpers.h"

namespace autodist::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr milliseconds kWait{5000};  // long enough never to matter unless something hangs

Error ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorCode::kInternal, "no error");
}

class CoordinatorTest : public ::testing::Test {
 protected:
  void Start(int workers, int parameter_servers, CoordinatorOptions options = {}) {
    autodist::proto::Strategy strategy;
    strategy.set_id("strategy-7");
    service_ = std::make_unique<CoordinatorService>(
        strategy::ResourceSpec::FromReplicaCounts(
            {.workers = workers, .parameter_servers = parameter_servers}),
        strategy, "job-1", options);
    server_ = std::make_unique<rpc::RpcServer>("127.0.0.1:0",
                                               std::vector<grpc::Service*>{service_.get()});
    client_ = std::make_unique<CoordinatorClient>(server_->endpoint());
  }

  void TearDown() override {
    if (service_) service_->Shutdown();
    server_.reset();
    service_.reset();
  }

  static MemberInfo Self(const std::string& node, int64_t pid) {
    MemberInfo self;
    self.node = node;
    self.role = node.rfind("ps-", 0) == 0 ? MemberRole::kParameterServer : MemberRole::kWorker;
    self.pid = pid;
    self.endpoint = "10.0.0.1:" + std::to_string(7000 + pid);
    return self;
  }

  // Registers `nodes` concurrently (pids 100, 101, ...), as separate processes would.
  std::map<std::string, RegisterResult> RegisterAll(const std::vector<std::string>& nodes) {
    std::vector<std::future<RegisterResult>> results;
    for (size_t i = 0; i < nodes.size(); ++i) {
      results.push_back(std::async(std::launch::async, [&, i] {
        return client_->Register(Self(nodes[i], 100 + static_cast<int64_t>(i)), "job-1", kWait);
      }));
    }
    std::map<std::string, RegisterResult> out;
    for (size_t i = 0; i < nodes.size(); ++i) out.emplace(nodes[i], results[i].get());
    return out;
  }

  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<rpc::RpcServer> server_;
  std::unique_ptr<CoordinatorClient> client_;
};

TEST_F(CoordinatorTest, RendezvousGivesEveryMemberItsRankTheMembersAndTheStrategy) {
  Start(2, 1);
  const auto results = RegisterAll({"ps-0", "worker-1", "worker-0"});
  for (const auto& [node, result] : results) {
    EXPECT_EQ(result.world_size, 2) << node;
    EXPECT_EQ(result.job_id, "job-1");
    EXPECT_EQ(result.strategy.id(), "strategy-7");
    ASSERT_EQ(result.members.size(), 3U);
    EXPECT_EQ(result.members[0].node, "worker-0");  // the chief first
    EXPECT_EQ(result.members[0].pid, 102);
    EXPECT_EQ(result.members[0].endpoint, "10.0.0.1:7102");
    EXPECT_EQ(result.members[1].node, "worker-1");
    EXPECT_EQ(result.members[2].node, "ps-0");
    EXPECT_EQ(result.members[2].role, MemberRole::kParameterServer);
  }
  EXPECT_EQ(results.at("worker-0").rank, 0);
  EXPECT_EQ(results.at("worker-1").rank, 1);
  EXPECT_EQ(results.at("ps-0").rank, 0);
  EXPECT_EQ(service_->Snapshot().phase, JobPhase::kRunning);
}

TEST_F(CoordinatorTest, BadRegistrationsAreRejectedAndTheServerKeepsServing) {
  Start(2, 0);
  const Error unknown = ErrorOf([&] { client_->Register(Self("worker-9", 1), "job-1", kWait); });
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(unknown.what(), HasSubstr("coordinator (" + server_->endpoint() + "): Register"));
  EXPECT_THAT(unknown.what(), HasSubstr("node 'worker-9' is not a member of job 'job-1'"));

  MemberInfo wrong_role = Self("worker-1", 1);
  wrong_role.role = MemberRole::kParameterServer;
  EXPECT_THAT(ErrorOf([&] { client_->Register(wrong_role, "job-1", kWait); }).what(),
              HasSubstr("node 'worker-1' is a worker in the job's resource spec, but registered "
                        "as a ps"));
  EXPECT_THAT(ErrorOf([&] { client_->Register(Self("worker-1", 1), "job-2", kWait); }).what(),
              HasSubstr("belongs to job 'job-2', but this coordinator runs job 'job-1'"));

  // worker-1 waits for the rendezvous; a second process claiming worker-1 is refused.
  auto first = std::async(std::launch::async,
                          [&] { return client_->Register(Self("worker-1", 11), "job-1", kWait); });
  while (service_->Snapshot().registered < 1) std::this_thread::yield();
  const Error duplicate = ErrorOf([&] { client_->Register(Self("worker-1", 12), "job-1", kWait); });
  EXPECT_EQ(duplicate.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(duplicate.what(), HasSubstr("node 'worker-1' is already registered by pid 11"));

  const RegisterResult chief = client_->Register(Self("worker-0", 10), "job-1", kWait);
  EXPECT_EQ(chief.rank, 0);
  EXPECT_EQ(first.get().rank, 1);
  EXPECT_EQ(chief.members[1].pid, 11);
}

TEST_F(CoordinatorTest, RendezvousTimeoutNamesTheMissingNodesAndFreesTheSlot) {
  Start(2, 1);
  const Error error =
      ErrorOf([&] { client_->Register(Self("worker-0", 10), "job-1", milliseconds(200)); });
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("Register: node 'worker-0': timed out after 0.2 s waiting "
                                      "for worker-1, ps-0 to register"));
  EXPECT_EQ(service_->Snapshot().registered, 0);
  EXPECT_EQ(service_->Snapshot().phase, JobPhase::kRendezvous);
}

TEST_F(CoordinatorTest, AClientsWaitIsCappedByMaxWait) {
  Start(2, 0, {.max_wait = milliseconds(200)});
  const auto start = std::chrono::steady_clock::now();
  const Error error = ErrorOf([&] { client_->Register(Self("worker-1", 11), "job-1", kWait); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_THAT(error.what(), HasSubstr("timed out after 0.2 s waiting for worker-0 to register"));
}

TEST_F(CoordinatorTest, RendezvousDeadlineFailsTheJob) {
  Start(2, 0, {.rendezvous_deadline = milliseconds(200)});
  const Error error = ErrorOf([&] { client_->Register(Self("worker-0", 10), "job-1", kWait); });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), HasSubstr("job 'job-1' failed: the rendezvous did not complete within "
                                      "0.2 s: worker-1 never registered"));
  EXPECT_EQ(service_->Snapshot().phase, JobPhase::kFailed);
}

TEST_F(CoordinatorTest, BarrierReleasesOnlyWhenAllArriveIsReusableAndTimesOut) {
  Start(2, 1);
  RegisterAll({"worker-0", "worker-1", "ps-0"});
  for (int generation = 0; generation < 2; ++generation) {
    std::atomic<bool> worker1_arrived = false;
    auto worker0 = std::async(std::launch::async, [&] {
      client_->Barrier("worker-0", "epoch", kWait);
      return worker1_arrived.load();
    });
    std::this_thread::sleep_for(milliseconds(100));
    worker1_arrived = true;
    client_->Barrier("worker-1", "epoch", kWait);
    EXPECT_TRUE(worker0.get()) << "worker-0 passed generation " << generation << " alone";
  }

  const Error timeout = ErrorOf([&] { client_->Barrier("worker-1", "epoch", milliseconds(200)); });
  EXPECT_EQ(timeout.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(timeout.what(), HasSubstr("Barrier 'epoch' (generation 2): worker 'worker-1': "
                                        "timed out after 0.2 s waiting for worker-0 to arrive"));
  // The failed call did not count: the retry joins generation 2 again, and worker-0 releases it.
  auto retry =
      std::async(std::launch::async, [&] { client_->Barrier("worker-1", "epoch", kWait); });
  client_->Barrier("worker-0", "epoch", kWait);
  retry.get();

  EXPECT_THAT(ErrorOf([&] { client_->Barrier("ps-0", "epoch", kWait); }).what(),
              HasSubstr("node 'ps-0' is a parameter server; only workers take part"));
}

TEST_F(CoordinatorTest, MissedHeartbeatFailsTheJobAndTheOthersAreTold) {
  Start(2, 0, {.heartbeat_deadline = milliseconds(300)});
  RegisterAll({"worker-0", "worker-1"});
  // worker-0 beats; worker-1 never does.
  HeartbeatResult result;
  const auto start = std::chrono::steady_clock::now();
  while (!(result = client_->Heartbeat("worker-0", 3)).abort) {
    ASSERT_LT(std::chrono::steady_clock::now() - start, milliseconds(3000));
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
  EXPECT_THAT(result.reason, HasSubstr("worker-1 (worker rank 1, pid 101) sent no heartbeat"));
  EXPECT_THAT(result.reason, Not(HasSubstr("worker-0")));
  const StatusSnapshot status = service_->Snapshot();
  EXPECT_EQ(status.phase, JobPhase::kFailed);
  EXPECT_EQ(status.reason, result.reason);
  EXPECT_EQ(status.step, 0);  // worker-1 never reported a step
  // worker-1 is presumed dead and worker-0 has been told: nothing is left to serve.
  EXPECT_TRUE(service_->WaitSettled(milliseconds(0)));
}

TEST_F(CoordinatorTest, FailedFinishAbortsWaitingCallsAndHeartbeats) {
  Start(2, 1);
  RegisterAll({"worker-0", "worker-1", "ps-0"});
  auto barrier = std::async(std::launch::async, [&] {
    return ErrorOf([&] { client_->Barrier("worker-0", "step", kWait); });
  });
  std::this_thread::sleep_for(milliseconds(50));
  client_->Finish("worker-1", true, "out of memory at step 12");
  const Error aborted = barrier.get();
  EXPECT_EQ(aborted.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(aborted.what(),
              HasSubstr("Barrier: job 'job-1' failed: worker-1 (worker rank 1, pid 101) failed: "
                        "out of memory at step 12"));
  EXPECT_FALSE(service_->WaitSettled(milliseconds(0)));  // ps-0 does not know yet
  const auto heartbeat = client_->Heartbeat("ps-0", 0);
  EXPECT_TRUE(heartbeat.abort);
  EXPECT_THAT(heartbeat.reason, HasSubstr("out of memory at step 12"));
  EXPECT_TRUE(service_->WaitSettled(milliseconds(1000)));

  autodist::proto::ProgressReport report;
  report.set_node("worker-0");
  EXPECT_THAT(ErrorOf([&] { client_->ReportProgress(report); }).what(),
              HasSubstr("ReportProgress: job 'job-1' failed"));
  const Error download = ErrorOf([&] { client_->GetInitialValues("ps-0", kWait); });
  EXPECT_EQ(download.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(download.what(), HasSubstr("out of memory at step 12"));
}

TEST_F(CoordinatorTest, AbortEndsTheRendezvousWithTheLaunchersReason) {
  Start(2, 0);
  auto registering = std::async(std::launch::async, [&] {
    return ErrorOf([&] { client_->Register(Self("worker-0", 10), "job-1", kWait); });
  });
  while (service_->Snapshot().registered < 1) std::this_thread::yield();
  client_->Abort("process of worker-1 exited with code 137");
  const Error error = registering.get();
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), HasSubstr("job 'job-1' failed: aborted: process of worker-1 exited "
                                      "with code 137"));
  const StatusSnapshot status = client_->Status(kWait);
  EXPECT_EQ(status.phase, JobPhase::kFailed);
  EXPECT_EQ(status.reason, "aborted: process of worker-1 exited with code 137");
  EXPECT_EQ(status.registered, 0);  // worker-0 left the rendezvous
}

TEST_F(CoordinatorTest, ProgressIsAggregatedAndTheJobSucceedsWhenEveryoneFinishes) {
  Start(2, 1);
  RegisterAll({"worker-0", "worker-1", "ps-0"});
  autodist::proto::ProgressReport report;
  report.set_node("worker-0");
  report.set_step(40);
  report.set_total_steps(100);
  report.set_loss(0.25);
  report.set_samples_per_second(1000);
  report.set_samples(2560);
  client_->ReportProgress(report);
  report.set_node("worker-1");
  report.set_step(38);
  report.set_loss(9);
  report.set_samples_per_second(900);
  report.set_samples(2432);
  client_->ReportProgress(report);
  EXPECT_FALSE(client_->Heartbeat("ps-0", 0).workers_finished);

  StatusSnapshot status = client_->Status(kWait);
  EXPECT_EQ(status.job_id, "job-1");
  EXPECT_EQ(status.phase, JobPhase::kRunning);
  EXPECT_EQ(status.registered, 3);
  EXPECT_EQ(status.expected, 3);
  EXPECT_EQ(status.step, 38);
  EXPECT_EQ(status.total_steps, 100);
  ASSERT_TRUE(status.loss.has_value());
  EXPECT_EQ(*status.loss, 0.25);
  EXPECT_EQ(status.samples_per_second, 1900);
  EXPECT_EQ(status.samples, 4992);
  ASSERT_EQ(status.members.size(), 3U);
  EXPECT_EQ(status.members[1].info.node, "worker-1");
  EXPECT_EQ(status.members[1].step, 38);
  EXPECT_EQ(status.members[1].info.pid, 101);

  client_->Finish("worker-0", false, "");
  client_->Finish("worker-1", false, "");
  EXPECT_TRUE(client_->Heartbeat("ps-0", 0).workers_finished);
  EXPECT_FALSE(service_->WaitSettled(milliseconds(0)));
  client_->Finish("ps-0", false, "");
  EXPECT_EQ(client_->Status(kWait).phase, JobPhase::kSucceeded);
  // The workers have not heard yet that every worker finished: the chief must stay.
  EXPECT_FALSE(service_->WaitSettled(milliseconds(0)));
  EXPECT_TRUE(client_->Heartbeat("worker-0", 0).workers_finished);
  EXPECT_TRUE(client_->Heartbeat("worker-1", 0).workers_finished);
  EXPECT_TRUE(service_->WaitSettled(milliseconds(1000)));
}

TEST_F(CoordinatorTest, ShutdownEndsBlockedCalls) {
  Start(2, 0);
  RegisterAll({"worker-0", "worker-1"});
  auto waiting = std::async(std::launch::async, [&] {
    return ErrorOf([&] { client_->GetInitialValues("worker-1", kWait); });
  });
  std::this_thread::sleep_for(milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  service_->Shutdown();
  const Error error = waiting.get();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(1000));
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("the coordinator of job 'job-1' is shutting down"));
  EXPECT_EQ(ErrorOf([&] { client_->Heartbeat("worker-0", 1); }).code(), ErrorCode::kUnavailable);
}

TEST(CoordinatorClient, RegisterWaitsForACoordinatorThatStartsLate) {
  std::string endpoint;
  {
    // Find a free port, then release it for the coordinator that starts later.
    autodist::proto::Coordinator::Service placeholder;
    rpc::RpcServer probe("127.0.0.1:0", {&placeholder});
    endpoint = probe.endpoint();
  }
  CoordinatorClient client(endpoint);
  MemberInfo self;
  self.node = "worker-0";
  self.endpoint = "10.0.0.1:7000";
  self.pid = 1;
  auto registering =
      std::async(std::launch::async, [&] { return client.Register(self, "job-1", kWait); });
  std::this_thread::sleep_for(milliseconds(300));
  CoordinatorService service(strategy::ResourceSpec::FromReplicaCounts({.workers = 1}), {},
                             "job-1");
  rpc::RpcServer server(endpoint, {&service});
  EXPECT_EQ(registering.get().world_size, 1);
  service.Shutdown();
}

TEST(CoordinatorClient, UnreachableCoordinatorIsUnavailableAfterTheWait) {
  CoordinatorClient client("127.0.0.1:1");  // nothing listens on port 1
  MemberInfo self;
  self.node = "worker-0";
  self.endpoint = "10.0.0.1:7000";
  const Error error = ErrorOf([&] { client.Register(self, "", milliseconds(300)); });
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("coordinator (127.0.0.1:1): Register"));
}

}  // namespace
}  // namespace autodist::coordinator
