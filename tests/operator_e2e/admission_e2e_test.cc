// What a real API server's admission chain does to a job, end to end: a pod refused for good (a
// Pod Security violation, as a namespace labelled restricted answers) fails the job FailedCreate
// with the server's message, once, instead of being retried in silence; a used-up quota keeps
// the job Pending with the reason until it admits the pods, and the job then succeeds.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/operator_e2e/e2e_fixture.h"

namespace autodist::app::e2e {
namespace {

using std::chrono::seconds;

long PodCreates(k8s::TestApiServer& server) {
  const nlohmann::json requests = server.faults().Stats().at("requests");
  const nlohmann::json::json_pointer path("/create/pods");
  return requests.contains(path) ? requests.at(path).get<long>() : 0;
}

TEST_F(OperatorEndToEnd, APodRefusedForGoodFailsTheJobWithTheServersMessage) {
  const std::string name = "fmnist-refused";
  const std::string refusal = "pods \"" + name +
                              "-worker-0\" is forbidden: violates PodSecurity "
                              "\"restricted:latest\": runAsNonRoot != true";
  server_->faults().Configure({{"failures",
                                {{{"verb", "create"},
                                  {"resource", "pods"},
                                  {"code", 403},
                                  {"count", 1000},
                                  {"message", refusal}}}}});
  JobManifest manifest;
  manifest.name = name;
  const std::shared_ptr<PodEvents> events = RecordPods(name);
  Apply(manifest.ToYaml());

  ASSERT_TRUE(WaitForCondition(name, "Failed", seconds(60)));
  const nlohmann::json job = Job(name);
  const nlohmann::json failed = ConditionOf(job, "Failed");
  ASSERT_EQ(failed.value("reason", ""), "FailedCreate") << Dump(name);
  EXPECT_TRUE(Contains(failed.value("message", ""), "the API server refused to create Pod " + name +
                                                        "-worker-0 (403 "
                                                        "Forbidden): " +
                                                        refusal))
      << failed.dump(2);
  bool announced = false;
  for (const auto& [reason, message] : KubectlEvents(name)) {
    announced = announced || (reason == "FailedCreate" && Contains(message, refusal));
  }
  EXPECT_TRUE(announced) << Dump(name);

  // Not retried: the refusal is the job's end, so the pod creates stop once it is Failed.
  const long creates = PodCreates(*server_);
  EXPECT_GE(creates, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(PodCreates(*server_), creates);
  EXPECT_TRUE(events->summary().added.empty());
  EXPECT_TRUE(WaitForCount(
      name, "jobs_failed", [&] { return metrics_->jobs_failed.With({"default"}).Value(); }, 1));
}

TEST_F(OperatorEndToEnd, AUsedUpQuotaKeepsTheJobPendingUntilItAdmitsThePods) {
  const std::string name = "fmnist-quota";
  server_->faults().Configure(
      {{"failures",
        {{{"verb", "create"},
          {"resource", "pods"},
          {"code", 403},
          {"count", 3},
          {"message", "pods \"" + name +
                          "-worker-0\" is forbidden: exceeded quota: team, requested: pods=1, "
                          "used: pods=10, limited: pods=10"}}}}});
  JobManifest manifest;
  manifest.name = name;
  Apply(manifest.ToYaml());

  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  const nlohmann::json job = Job(name);
  EXPECT_TRUE(ConditionOf(job, "Failed").is_null()) << job.dump(2);
  // Said while it waited, once for the same refusal.
  int pending = 0;
  for (const nlohmann::json& event : Events(name)) {
    if (event.value("reason", "") != "FailedCreate") continue;
    ++pending;
    EXPECT_EQ(event.value("type", ""), "Warning");
    EXPECT_TRUE(Contains(event.value("message", ""), "exceeded quota: team")) << event.dump(2);
    EXPECT_TRUE(Contains(event.value("message", ""), "trying again until it is admitted"));
  }
  EXPECT_EQ(pending, 1) << Dump(name);
  EXPECT_TRUE(server_->faults().State().value("failures", nlohmann::json::array()).empty());
  EXPECT_TRUE(WaitForMembersSucceeded(name));
}

}  // namespace
}  // namespace autodist::app::e2e
