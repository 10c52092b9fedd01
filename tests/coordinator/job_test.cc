// The coordinator's bookkeeping without RPC: JobState (members, rendezvous, liveness, phase),
// Barriers and ReduceRounds. Time is passed in, so deadlines are tested without waiting.
#include "runtime/coordinator/job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "runtime/common/error.h"
#include "runtime/coordinator/barriers.h"
#include "runtime/coordinator/rounds.h"

namespace autodist::coordinator {
namespace {

using autodist::proto::RegisterRequest;
using strategy::NodeRole;
using strategy::NodeSpec;
using strategy::ResourceSpec;
using tensor::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = JobState::Clock;
using std::chrono::milliseconds;

const Clock::time_point kStart = Clock::time_point() + std::chrono::hours(1);

std::string ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// worker-0 (chief), worker-1, ps-0.
ResourceSpec TwoWorkersOnePs() {
  return ResourceSpec::FromReplicaCounts({.workers = 2, .parameter_servers = 1});
}

RegisterRequest Request(const std::string& node, autodist::proto::MemberRole role, int64_t pid) {
  RegisterRequest request;
  request.set_node(node);
  request.set_role(role);
  request.set_pid(pid);
  request.set_endpoint("10.0.0.1:" + std::to_string(7000 + pid));
  return request;
}

constexpr auto kWorker = autodist::proto::MEMBER_ROLE_WORKER;
constexpr auto kPs = autodist::proto::MEMBER_ROLE_PS;

void RegisterAll(JobState& job) {
  ASSERT_FALSE(job.Register(Request("worker-1", kWorker, 11), kStart));
  ASSERT_FALSE(job.Register(Request("ps-0", kPs, 12), kStart));
  ASSERT_FALSE(job.Register(Request("worker-0", kWorker, 10), kStart));
  ASSERT_TRUE(job.rendezvous_complete());
}

TEST(ExpectedMembers, RanksTheChiefFirstThenResourceSpecOrder) {
  std::vector<NodeSpec> nodes(4);
  nodes[0].address = "host-a";
  nodes[1].address = "host-b";
  nodes[1].chief = true;
  nodes[2].address = "host-c";
  nodes[2].role = NodeRole::kParameterServer;
  nodes[3].address = "host-d";
  const auto members = ExpectedMembers(ResourceSpec::FromNodes(nodes, "test"));
  ASSERT_EQ(members.size(), 4U);
  EXPECT_EQ(members[0].node, "host-b");
  EXPECT_EQ(members[0].rank, 0);
  EXPECT_EQ(members[1].node, "host-a");
  EXPECT_EQ(members[1].rank, 1);
  EXPECT_EQ(members[2].node, "host-d");
  EXPECT_EQ(members[2].rank, 2);
  EXPECT_EQ(members[3].node, "host-c");
  EXPECT_EQ(members[3].role, MemberRole::kParameterServer);
  EXPECT_EQ(members[3].rank, 0);

  nodes[1].chief = false;
  nodes[2].chief = true;
  EXPECT_THAT(ErrorOf([&] { ExpectedMembers(ResourceSpec::FromNodes(nodes, "test")); }),
              HasSubstr("chief node 'host-c' has role ps"));
}

TEST(JobState, RendezvousCompletesWithTheLastMemberAndRepliesWithRanks) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  EXPECT_EQ(job.world_size(), 2);
  EXPECT_EQ(job.expected(), 3);
  ASSERT_FALSE(job.Register(Request("worker-1", kWorker, 11), kStart));
  EXPECT_FALSE(job.rendezvous_complete());
  EXPECT_THAT(job.MissingNodes(), ElementsAre("worker-0", "ps-0"));
  EXPECT_EQ(job.registered(), 1);
  RegisterAll(job);
  EXPECT_EQ(job.phase(), JobPhase::kRunning);

  const auto reply = job.RegisterReplyFor("worker-1");
  EXPECT_EQ(reply.rank(), 1);
  EXPECT_EQ(reply.world_size(), 2);
  EXPECT_EQ(reply.job_id(), "job-1");
  ASSERT_EQ(reply.members_size(), 3);
  EXPECT_EQ(reply.members(0).node(), "worker-0");
  EXPECT_EQ(reply.members(0).pid(), 10);
  EXPECT_EQ(reply.members(1).node(), "worker-1");
  EXPECT_EQ(reply.members(2).node(), "ps-0");
  EXPECT_EQ(reply.members(2).role(), kPs);
}

TEST(JobState, RejectsBadRegistrationsNamingTheNode) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  EXPECT_THAT(ErrorOf([&] { job.Register(Request("worker-7", kWorker, 1), kStart); }),
              HasSubstr("node 'worker-7' is not a member of job 'job-1'; its nodes are: "
                        "worker-0, worker-1, ps-0"));
  EXPECT_THAT(ErrorOf([&] { job.Register(Request("ps-0", kWorker, 1), kStart); }),
              HasSubstr("node 'ps-0' is a ps in the job's resource spec, but registered as a "
                        "worker"));
  auto other_job = Request("worker-1", kWorker, 1);
  other_job.set_job_id("job-2");
  EXPECT_THAT(ErrorOf([&] { job.Register(other_job, kStart); }),
              HasSubstr("node 'worker-1' belongs to job 'job-2'"));
  auto no_endpoint = Request("worker-1", kWorker, 1);
  no_endpoint.clear_endpoint();
  EXPECT_THAT(ErrorOf([&] { job.Register(no_endpoint, kStart); }), HasSubstr("gave no endpoint"));
  EXPECT_EQ(job.registered(), 0);
}

TEST(JobState, SecondProcessForANodeIsRefusedAndARetryJoins) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  ASSERT_FALSE(job.Register(Request("worker-1", kWorker, 11), kStart));
  const auto conflict = job.Register(Request("worker-1", kWorker, 99), kStart);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_THAT(*conflict, HasSubstr("node 'worker-1' is already registered by pid 11"));
  EXPECT_FALSE(job.Register(Request("worker-1", kWorker, 11), kStart));  // a retried call
  // Both calls of pid 11 wait; the slot is freed only when the last one leaves.
  job.LeaveRendezvous("worker-1");
  EXPECT_EQ(job.registered(), 1);
  job.LeaveRendezvous("worker-1");
  EXPECT_EQ(job.registered(), 0);
  EXPECT_FALSE(job.Register(Request("worker-1", kWorker, 99), kStart));  // a restarted process
}

TEST(JobState, RendezvousDeadlineNamesTheMissingNodes) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  ASSERT_FALSE(job.Register(Request("worker-0", kWorker, 10), kStart));
  const auto deadline = kStart + milliseconds(500);
  EXPECT_FALSE(job.CheckDeadlines(kStart + milliseconds(499), milliseconds(100), deadline));
  EXPECT_TRUE(job.CheckDeadlines(kStart + milliseconds(500), milliseconds(100), deadline));
  EXPECT_TRUE(job.failed());
  EXPECT_THAT(job.reason(), HasSubstr("worker-1, ps-0 never registered"));
}

TEST(JobState, HeartbeatDeadlineNamesTheSilentMember) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  RegisterAll(job);
  const auto deadline = milliseconds(300);
  job.Heartbeat("worker-0", 5, kStart + milliseconds(250));
  job.Heartbeat("ps-0", 0, kStart + milliseconds(250));
  EXPECT_FALSE(job.CheckDeadlines(kStart + milliseconds(300), deadline, std::nullopt));
  EXPECT_TRUE(job.CheckDeadlines(kStart + milliseconds(400), deadline, std::nullopt));
  EXPECT_THAT(job.reason(), HasSubstr("worker-1 (worker rank 1, pid 11) sent no heartbeat"));
  EXPECT_THAT(job.reason(), ::testing::Not(HasSubstr("worker-0")));
  // The lost member cannot be told; once the others are, nothing is left to serve.
  EXPECT_FALSE(job.settled());
  job.MarkNotified("worker-0");
  EXPECT_FALSE(job.settled());
  job.MarkNotified("ps-0");
  EXPECT_TRUE(job.settled());
}

TEST(JobState, SucceedsWhenEveryMemberFinishesAndFailsOnAFailedFinish) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  EXPECT_THAT(ErrorOf([&] { job.Finish("worker-0", false, ""); }),
              HasSubstr("finished before the rendezvous completed"));
  RegisterAll(job);
  job.Finish("worker-0", false, "");
  job.Finish("worker-1", false, "");
  EXPECT_TRUE(job.workers_finished());
  EXPECT_FALSE(job.settled());
  job.Finish("ps-0", false, "");
  EXPECT_EQ(job.phase(), JobPhase::kSucceeded);
  // Settled only once every member heard that the workers finished: a worker still waiting for
  // that reply would otherwise lose the coordinator and take the job's end for a failure.
  job.MarkToldWorkersFinished("ps-0");
  job.MarkToldWorkersFinished("worker-0");
  EXPECT_FALSE(job.settled());
  job.MarkToldWorkersFinished("worker-1");
  EXPECT_TRUE(job.settled());

  JobState failing(TwoWorkersOnePs(), "job-1", kStart);
  RegisterAll(failing);
  failing.Finish("worker-1", true, "loss is NaN at step 7");
  EXPECT_TRUE(failing.failed());
  EXPECT_EQ(failing.reason(), "worker-1 (worker rank 1, pid 11) failed: loss is NaN at step 7");
  failing.Fail("a later reason");
  EXPECT_THAT(failing.reason(), HasSubstr("loss is NaN"));  // the first reason is kept
}

TEST(JobState, StatusAggregatesProgressOverWorkers) {
  JobState job(TwoWorkersOnePs(), "job-1", kStart);
  RegisterAll(job);
  autodist::proto::ProgressReport report;
  report.set_node("worker-0");
  report.set_step(12);
  report.set_total_steps(100);
  report.set_loss(0.5);
  report.set_samples_per_second(300);
  report.set_samples(1200);
  job.Progress(report, kStart);
  report.set_node("worker-1");
  report.set_step(10);
  report.set_loss(0.75);
  report.set_samples_per_second(200);
  report.set_samples(1000);
  job.Progress(report, kStart);
  report.set_node("ps-0");
  EXPECT_THAT(ErrorOf([&] { job.Progress(report, kStart); }),
              HasSubstr("node 'ps-0' is a parameter server; only workers take part"));

  const auto status = job.Status(kStart + std::chrono::seconds(2));
  EXPECT_EQ(status.phase(), autodist::proto::JOB_PHASE_RUNNING);
  EXPECT_EQ(status.step(), 10);  // the slowest worker
  EXPECT_EQ(status.total_steps(), 100);
  EXPECT_TRUE(status.has_loss());
  EXPECT_EQ(status.loss(), 0.5);  // the chief's
  EXPECT_EQ(status.samples_per_second(), 500);
  EXPECT_EQ(status.samples(), 2200);
  EXPECT_EQ(status.registered(), 3);
  ASSERT_EQ(status.members_size(), 3);
  EXPECT_DOUBLE_EQ(status.members(0).heartbeat_age_seconds(), 2.0);
}

TEST(Barriers, ReleaseOnlyWhenEveryWorkerArrivedAndReuseByGeneration) {
  Barriers barriers({"worker-0", "worker-1", "worker-2"});
  EXPECT_THAT(barriers.Missing("epoch", 0), ElementsAre("worker-0", "worker-1", "worker-2"));
  barriers.Arrive("epoch", 0, 1);
  barriers.Arrive("epoch", 0, 1);  // a retried call does not count twice
  barriers.Arrive("epoch", 0, 0);
  EXPECT_FALSE(barriers.Released("epoch", 0));
  EXPECT_THAT(barriers.Missing("epoch", 0), ElementsAre("worker-2"));
  barriers.Arrive("epoch", 1, 0);  // worker-0 is already waiting at the next generation
  barriers.Arrive("epoch", 0, 2);
  EXPECT_TRUE(barriers.Released("epoch", 0));
  EXPECT_TRUE(barriers.Missing("epoch", 0).empty());
  EXPECT_FALSE(barriers.Released("epoch", 1));
  EXPECT_THAT(barriers.Missing("epoch", 1), ElementsAre("worker-1", "worker-2"));
  EXPECT_THAT(ErrorOf([&] { barriers.Arrive("", 0, 0); }), HasSubstr("named no barrier"));
}

Tensor Values(const std::vector<float>& values) {
  return Tensor::FromVector<float>({static_cast<int64_t>(values.size())}, values);
}

std::vector<float> Floats(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

ReduceSubmission Submission(int replicas, std::vector<float> mean, std::vector<float> count) {
  ReduceSubmission submission;
  submission.replicas = replicas;
  submission.sums.emplace("bn/mean", Values(mean));
  submission.sums.emplace("count", Values(count));
  submission.reductions.emplace("count", autodist::proto::STATE_REDUCTION_SUM);
  return submission;
}

TEST(ReduceRounds, MeanDividesByEveryReplicaAndSumDoesNot) {
  ReduceRounds rounds({"worker-0", "worker-1"});
  rounds.Submit("step-10", 1, Submission(1, {3, 6}, {1}));
  EXPECT_EQ(rounds.Result("step-10"), nullptr);
  EXPECT_THAT(rounds.Missing("step-10"), ElementsAre("worker-0"));
  rounds.Submit("step-10", 0, Submission(2, {3, 0}, {2}));
  const auto result = rounds.Result("step-10");
  ASSERT_NE(result, nullptr);
  EXPECT_THAT(Floats(result->at("bn/mean")), ElementsAre(2.0F, 2.0F));  // (3+3)/3, (0+6)/3
  EXPECT_THAT(Floats(result->at("count")), ElementsAre(3.0F));
  EXPECT_EQ(rounds.held(), 1U);
  rounds.Collected("step-10", 0);
  EXPECT_EQ(rounds.held(), 1U);
  rounds.Collected("step-10", 1);
  EXPECT_EQ(rounds.held(), 0U);  // freed
  EXPECT_THAT(ErrorOf([&] {
                rounds.Submit("step-10", 0, Submission(2, {1, 1}, {1}));
              }),
              HasSubstr("round 'step-10', which was reduced already"));
}

TEST(ReduceRounds, RejectsDuplicatesAndMismatchesNamingWorkerAndTensor) {
  ReduceRounds rounds({"worker-0", "worker-1", "worker-2"});
  rounds.Submit("r", 0, Submission(1, {1, 2}, {1}));
  EXPECT_THAT(ErrorOf([&] {
                rounds.Submit("r", 0, Submission(1, {1, 2}, {1}));
              }),
              HasSubstr("round 'r': worker 'worker-0' submitted this round twice"));
  EXPECT_THAT(ErrorOf([&] {
                rounds.Submit("r", 1, Submission(1, {1, 2, 3}, {1}));
              }),
              HasSubstr("worker 'worker-1' sent tensor 'bn/mean' with shape [3], but worker "
                        "'worker-0' sent shape [2]"));
  // The round can never complete: everyone still waiting for it learns why.
  ASSERT_TRUE(rounds.Failure("r").has_value());
  EXPECT_THAT(*rounds.Failure("r"), HasSubstr("worker 'worker-1' sent tensor 'bn/mean'"));
  EXPECT_THAT(ErrorOf([&] {
                rounds.Submit("r", 2, Submission(1, {1, 2}, {1}));
              }),
              HasSubstr("ReduceStates round 'r' failed"));
  EXPECT_EQ(rounds.held(), 0U);

  ReduceSubmission ints;
  ints.sums.emplace("steps", Tensor::FromVector<int64_t>({1}, {4}));
  EXPECT_THAT(ErrorOf([&] { rounds.Submit("s", 0, ints); }),
              HasSubstr("worker 'worker-0' sent tensor 'steps' as int64; only float32"));
  auto extra = Submission(1, {1, 2}, {1});
  rounds.Submit("t", 0, Submission(1, {1, 2}, {1}));
  extra.sums.emplace("other", Values({0}));
  EXPECT_THAT(ErrorOf([&] { rounds.Submit("t", 2, extra); }),
              HasSubstr("worker 'worker-2' sent tensor 'other', which worker 'worker-0' did not"));
}

TEST(ReduceRounds, WithdrawnSubmissionCanBeRetried) {
  ReduceRounds rounds({"worker-0", "worker-1"});
  rounds.Submit("r", 0, Submission(1, {1, 2}, {1}));
  rounds.Withdraw("r", 0);
  EXPECT_EQ(rounds.held(), 0U);
  rounds.Submit("r", 0, Submission(1, {1, 2}, {1}));
  rounds.Submit("r", 1, Submission(1, {3, 4}, {1}));
  EXPECT_THAT(Floats(rounds.Result("r")->at("bn/mean")), ElementsAre(2.0F, 3.0F));
}

}  // namespace
}  // namespace autodist::coordinator
