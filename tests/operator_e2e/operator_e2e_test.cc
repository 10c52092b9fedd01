// The operator end to end, as a user drives it: real kubectl applies the CRD and a Fashion-MNIST
// job (2 workers + 1 parameter server, a few steps) to the API-server test double; the
// AutoDistJob controller compiles it and creates its ConfigMap, Service and pods; the node agent
// runs each pod's autodist-runtime as a local process; `kubectl wait` sees Succeeded; deleting
// the job removes its children. And a longer job whose progress shows while it runs.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>

#include "tests/operator_e2e/e2e_fixture.h"

namespace autodist::app::e2e {
namespace {

namespace fs = std::filesystem;

// Job names differ per test: a job's member ports derive from its name (a slot of the port range
// the fixture sets), so tests that run at once, here or in another build tree, do not collide.
TEST_F(OperatorEndToEnd, FashionMnistJobSucceedsAndDeletingItRemovesItsChildren) {
  const std::string name = "fmnist-succeeds";
  JobManifest manifest;
  manifest.name = name;
  manifest.steps = 30;
  manifest.checkpoint_path = (root_ / "ckpt").string();
  Apply(manifest.ToYaml());
  const CommandResult waited =
      Kubectl("wait --for=condition=Succeeded adj/" + name + " --timeout=240s");
  ASSERT_EQ(waited.exit_code, 0) << waited.output << "\n" << Dump(name);

  // kubectl get adj: the CRD's printer columns, filled from the status.
  const CommandResult listed = Kubectl("get adj");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  for (const char* column : {"NAME", "STATE", "BUILDER", "WORKERS", "PS", "STEP", "AGE"}) {
    EXPECT_TRUE(Contains(listed.output, column)) << listed.output;
  }
  EXPECT_TRUE(Contains(listed.output, name)) << listed.output;
  EXPECT_TRUE(Contains(listed.output, "Succeeded")) << listed.output;

  // Read as any client would (the operator's own client is kept to the operator's requests,
  // which deploy.operator_rbac compares with the chart's rules).
  const nlohmann::json job = Job(name);
  const nlohmann::json& status = job.at("status");
  EXPECT_EQ(status.value("state", ""), "Succeeded") << status.dump(2);
  EXPECT_TRUE(status.contains("completionTime")) << status.dump(2);
  EXPECT_EQ(status.at("strategy").value("builder", ""), "PS") << status.dump(2);
  EXPECT_EQ(status.value("restartCount", -1), 0) << status.dump(2);
  // The chief's success finished the job; the other members' completions are counted too.
  EXPECT_TRUE(WaitForMembersSucceeded(name));
  // A succeeded job did all of its steps, whatever the last progress read saw.
  if (const nlohmann::json done = Job(name); done["status"].contains("progress")) {
    EXPECT_EQ(done["status"]["progress"].value("step", 0), 30) << done.dump(2);
  }
  // It trained for real: the chief wrote its checkpoints, the last at the final step.
  ASSERT_TRUE(fs::exists(root_ / "ckpt")) << PodLogs();
  bool final_checkpoint = false;
  for (const auto& entry : fs::recursive_directory_iterator(root_ / "ckpt")) {
    if (Contains(entry.path().filename().string(), "30")) final_checkpoint = true;
  }
  EXPECT_TRUE(final_checkpoint) << PodLogs();
  EXPECT_EQ(CountObjects("pods", name), 3u);
  EXPECT_EQ(CountObjects("services", name), 1u);
  EXPECT_EQ(CountObjects("configmaps", name), 1u);
  // Its members trained over mutual TLS with the job's own CA: the Secret holds a pair per member
  // and the operator's (which read the progress above), and each pod got only its own.
  EXPECT_EQ(CountObjects("secrets", name), 1u);
  const CommandResult secret = Kubectl("get secret " + name + "-tls -o json");
  ASSERT_EQ(secret.exit_code, 0) << secret.output;
  const nlohmann::json secret_object = nlohmann::json::parse(secret.output);
  std::vector<std::string> keys;
  for (const auto& [key, value] : secret_object.at("data").items()) {
    keys.push_back(key);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"ca.crt", "ca.key", "operator.crt", "operator.key",
                                            "ps-0.crt", "ps-0.key", "worker-0.crt", "worker-0.key",
                                            "worker-1.crt", "worker-1.key"}));
  for (const std::string member : {"worker-0", "worker-1", "ps-0"}) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(root_ / "autodist-tls" / member)) {
      files.push_back(entry.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    EXPECT_EQ(files, (std::vector<std::string>{"ca.crt", "tls.crt", "tls.key"})) << member;
  }
  // The job's NetworkPolicy, as kubectl shows it: the job's pods accept its own pods (any port)
  // and the operator's (the coordinator's port). The double stores policies but enforces none.
  const CommandResult policy = Kubectl("get networkpolicy " + name + " -o json");
  ASSERT_EQ(policy.exit_code, 0) << policy.output;
  const nlohmann::json policy_spec = nlohmann::json::parse(policy.output).at("spec");
  const nlohmann::json job_pods = {{"matchLabels", {{"autodist.io/job-name", name}}}};
  EXPECT_EQ(policy_spec["podSelector"], job_pods);
  EXPECT_EQ(policy_spec["policyTypes"], nlohmann::json::array({"Ingress"}));
  ASSERT_EQ(policy_spec["ingress"].size(), 2u) << policy_spec.dump(2);
  EXPECT_EQ(policy_spec["ingress"][0]["from"][0]["podSelector"], job_pods);
  EXPECT_FALSE(policy_spec["ingress"][0].contains("ports"));
  EXPECT_EQ(policy_spec["ingress"][1]["from"][0]["podSelector"]["matchLabels"],
            (nlohmann::json{{"app.kubernetes.io/name", "autodist-operator"}}));
  EXPECT_EQ(policy_spec["ingress"][1]["ports"],
            nlohmann::json::parse(R"([{"port": "autodist", "protocol": "TCP"}])"));
  EXPECT_TRUE(WaitForCount(
      name, "jobs_successful", [&] { return metrics_->jobs_successful.With({"default"}).Value(); },
      1));
  // kubectl shows why the builder was chosen.
  std::vector<std::string> chosen;
  for (const auto& [reason, message] : KubectlEvents(name)) {
    if (reason == "BuilderChosen") chosen.push_back(message);
  }
  EXPECT_EQ(chosen, std::vector<std::string>{"PS as spec.strategy.builder names it (2 workers "
                                             "with 0 GPU(s) each, 1 parameter server(s))"});

  const CommandResult deleted = Kubectl("delete adj " + name + " --wait=true");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  WaitFor(name, "the job's children to be garbage-collected", std::chrono::seconds(20), [&] {
    return CountObjects("pods", name) + CountObjects("services", name) +
               CountObjects("configmaps", name) + CountObjects("networkpolicies", name) +
               CountObjects("secrets", name) ==
           0;
  });
}

// A longer job reports its training progress while it runs: status.progress.step, the STEP
// column of `kubectl get adj`, moves before the job finishes.
TEST_F(OperatorEndToEnd, ProgressShowsWhileTheJobRuns) {
  const std::string name = "fmnist-progress";
  JobManifest manifest;
  manifest.name = name;
  manifest.steps = 600;  // a few seconds: kubectl must catch it running
  manifest.log_interval_steps = 5;
  Apply(manifest.ToYaml());

  // kubectl's own view, as a user watches it: STATE Running with a STEP above 0.
  int seen_step = 0;
  std::string last;
  WaitFor(name, "kubectl get adj to show a step while Running", std::chrono::seconds(120), [&] {
    const CommandResult row = Kubectl("get adj " + name + " --no-headers");
    last = row.output;
    std::istringstream fields(row.output);
    std::string job, state, builder, workers, ps, step;
    if (!(fields >> job >> state >> builder >> workers >> ps >> step)) return false;
    if (state != "Running") {
      // Finished before a running step was seen: the job is too short for this machine.
      EXPECT_FALSE(state == "Succeeded" || state == "Failed") << row.output << Dump(name);
      return state == "Succeeded" || state == "Failed";
    }
    if (step.find_first_not_of("0123456789") != std::string::npos) return false;  // "<none>"
    seen_step = std::stoi(step);
    return seen_step > 0;
  });
  EXPECT_GT(seen_step, 0) << last;
  EXPECT_LT(seen_step, manifest.steps) << last;
  const nlohmann::json running = Job(name);
  EXPECT_GT(running["status"]["progress"].value("step", 0), 0) << running.dump(2);

  ASSERT_TRUE(WaitForCondition(name, "Succeeded"));
  const nlohmann::json done = Job(name);
  const nlohmann::json progress = done.at("status").value("progress", nlohmann::json::object());
  EXPECT_EQ(progress.value("totalSteps", 0), manifest.steps) << done.dump(2);
  EXPECT_GE(progress.value("step", 0), seen_step) << done.dump(2);
  EXPECT_TRUE(progress.contains("lastUpdateTime")) << done.dump(2);
}

}  // namespace
}  // namespace autodist::app::e2e
