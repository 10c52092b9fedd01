// End to end with the real kubectl (/usr/bin/kubectl, a v1.32 client) against the
// fake-apiserver process: CRD registration, apply, printer columns, status and `kubectl wait`,
// generation, cascading delete, label selectors, `get -w`, fault handling, legacy discovery and
// the --node-agent mode.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Background;
using testing::CommandResult;
using testing::HttpCall;
using testing::ReadFile;
using testing::WriteFile;

const char* const kJobManifest = AUTODIST_SOURCE_DIR "/examples/fashion-mnist/job-ps.yaml";
const char* const kJobPath = "/apis/autodist.io/v1alpha1/namespaces/default/autodistjobs/fmnist-ps";

nlohmann::json Condition(const std::string& type) {
  return {{"type", type},
          {"status", "True"},
          {"reason", "TrainingFinished"},
          {"message", "all workers finished"},
          {"lastTransitionTime", "2025-01-01T00:00:00Z"}};
}

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(const std::vector<std::string>& extra) {
    if (!std::filesystem::exists("/usr/bin/kubectl")) GTEST_SKIP() << "no /usr/bin/kubectl";
    const std::string port_file = dir_.path() + "/port";
    std::filesystem::remove(port_file);  // a restarted server writes a new one
    std::vector<std::string> argv = {AUTODIST_FAKE_APISERVER, "--port", "0", "--port-file",
                                     port_file};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ =
        std::make_unique<Background>(argv, std::map<std::string, std::string>{},
                                     dir_.path() + "/server.out", dir_.path() + "/server.err");
    for (int i = 0; i < 250 && !std::filesystem::exists(port_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_TRUE(std::filesystem::exists(port_file)) << ReadFile(dir_.path() + "/server.err");
    url_ = "http://127.0.0.1:" + std::to_string(std::stoi(ReadFile(port_file)));
    // kubectl talks plain HTTP to a server: URL; no credentials are needed.
    WriteFile(dir_.path() + "/kubeconfig", KubeconfigFor(url_));
  }

  std::vector<std::string> KubectlArgv(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/kubectl", "--kubeconfig",
                                     dir_.path() + "/kubeconfig", "--cache-dir",
                                     dir_.path() + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  CommandResult Kubectl(const std::vector<std::string>& args) {
    return testing::Run(KubectlArgv(args), {{"HOME", dir_.path()}});
  }

  // kubectl that must succeed; returns its stdout.
  std::string Ok(const std::vector<std::string>& args) {
    const CommandResult r = Kubectl(args);
    EXPECT_EQ(r.exit_code, 0) << "kubectl " << ::testing::PrintToString(args) << "\n" << r.err;
    return r.out;
  }

  void PatchStatus(const nlohmann::json& status) {
    const auto r =
        HttpCall(url_, "PATCH", std::string(kJobPath) + "/status",
                 nlohmann::json{{"status", status}}.dump(), "application/merge-patch+json");
    ASSERT_EQ(r.status, 200) << r.raw;
  }

  void ApplyCrdAndJob() {
    EXPECT_NE(Ok({"apply", "-f", AutoDistJobCrdPath()}).find("autodistjobs.autodist.io created"),
              std::string::npos);
    EXPECT_NE(Ok({"apply", "-f", kJobManifest}).find("autodistjob.autodist.io/fmnist-ps created"),
              std::string::npos);
  }

  testing::TempDir dir_;
  std::unique_ptr<Background> server_;
  std::string url_;
};

TEST_F(KubectlTest, ApplyGetWaitAndReapply) {
  ApplyCrdAndJob();
  EXPECT_NE(Ok({"get", "crd"}).find("autodistjobs.autodist.io"), std::string::npos);

  const std::string empty = Ok({"get", "adj"});
  EXPECT_TRUE(
      std::regex_search(empty, std::regex("^NAME +STATE +BUILDER +WORKERS +PS +STEP +AGE\n")))
      << empty;
  PatchStatus(
      {{"state", "Running"},
       {"strategy", {{"builder", "PSLoadBalancing"}, {"workers", 2}, {"parameterServers", 1}}},
       {"progress", {{"step", 12}}}});
  const std::string table = Ok({"get", "adj"});
  EXPECT_TRUE(std::regex_search(
      table, std::regex("\nfmnist-ps +Running +PSLoadBalancing +2 +1 +12 +[0-9]+s\n")))
      << table;

  const auto object = nlohmann::json::parse(Ok({"get", "adj", "fmnist-ps", "-o", "json"}));
  EXPECT_EQ(object["spec"]["strategy"]["builder"], "PSLoadBalancing");
  EXPECT_EQ(object["spec"]["resources"]["workers"], 2);
  EXPECT_EQ(object["metadata"]["generation"], 1);
  EXPECT_EQ(object["status"]["state"], "Running");

  // kubectl wait watches the job until the condition appears.
  Background wait(
      KubectlArgv({"wait", "--for=condition=Succeeded", "adj/fmnist-ps", "--timeout=20s"}),
      {{"HOME", dir_.path()}}, dir_.path() + "/wait.out", dir_.path() + "/wait.err");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(wait.Wait(std::chrono::milliseconds(0)).has_value()) << "wait returned early";
  PatchStatus({{"state", "Succeeded"}, {"conditions", {Condition("Succeeded")}}});
  EXPECT_EQ(wait.Wait(std::chrono::seconds(20)), 0) << ReadFile(dir_.path() + "/wait.err");
  EXPECT_NE(ReadFile(dir_.path() + "/wait.out").find("condition met"), std::string::npos);

  // A changed spec: kubectl apply patches, the generation moves, the status stays.
  std::string manifest = ReadFile(kJobManifest);
  manifest = std::regex_replace(manifest, std::regex("batchSizePerReplica: 32"),
                                "batchSizePerReplica: 64");
  WriteFile(dir_.path() + "/job.yaml", manifest);
  EXPECT_NE(Ok({"apply", "-f", dir_.path() + "/job.yaml"}).find("configured"), std::string::npos);
  const auto changed = nlohmann::json::parse(Ok({"get", "adj", "fmnist-ps", "-o", "json"}));
  EXPECT_EQ(changed["metadata"]["generation"], 2);
  EXPECT_EQ(changed["spec"]["data"]["batchSizePerReplica"], 64);
  EXPECT_EQ(changed["status"]["state"], "Succeeded");
  EXPECT_NE(Ok({"apply", "-f", dir_.path() + "/job.yaml"}).find("unchanged"), std::string::npos);
}

TEST_F(KubectlTest, DeleteCascadesToOwnedObjectsAndLabelsSelect) {
  ApplyCrdAndJob();
  const std::string uid = Ok({"get", "adj", "fmnist-ps", "-o", "jsonpath={.metadata.uid}"});
  ASSERT_EQ(uid.size(), 36u);
  const std::string owner =
      "  ownerReferences:\n  - {apiVersion: autodist.io/v1alpha1, kind: "
      "AutoDistJob, name: fmnist-ps, uid: " +
      uid + ", controller: true}\n";
  std::string owned;
  for (const std::string pod : {"worker-0", "worker-1", "ps-0"}) {
    const std::string role = pod.substr(0, pod.find('-'));
    owned += "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fmnist-ps-" + pod +
             "\n  labels: {job: fmnist-ps, role: " + role + "}\n" + owner +
             "spec:\n  containers:\n  - {name: runtime, image: autodist-runtime:dev}\n---\n";
  }
  owned += "apiVersion: v1\nkind: Service\nmetadata:\n  name: fmnist-ps\n" + owner +
           "spec:\n  clusterIP: None\n  selector: {job: fmnist-ps}\n---\n";
  owned += "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fmnist-ps-autodist\n" + owner +
           "data: {strategy: x}\n---\n";
  owned += "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unrelated\ndata: {a: b}\n";
  WriteFile(dir_.path() + "/owned.yaml", owned);
  Ok({"apply", "-f", dir_.path() + "/owned.yaml"});

  const std::string workers = Ok({"get", "pods", "-l", "role=worker", "-o", "name"});
  EXPECT_EQ(workers, "pod/fmnist-ps-worker-0\npod/fmnist-ps-worker-1\n");
  EXPECT_EQ(Ok({"get", "pods", "-l", "role in (ps),job", "-o", "name"}), "pod/fmnist-ps-ps-0\n");
  EXPECT_EQ(Ok({"get", "pods", "-l", "role!=worker", "-o", "name"}), "pod/fmnist-ps-ps-0\n");
  const std::string pods = Ok({"get", "pods"});
  EXPECT_TRUE(std::regex_search(pods, std::regex("fmnist-ps-ps-0 +0/1 +Pending +0 +[0-9]+s")))
      << pods;

  EXPECT_NE(Ok({"delete", "adj", "fmnist-ps"}).find("deleted"), std::string::npos);
  EXPECT_EQ(Ok({"get", "pods,services,configmaps", "-o", "name"}), "configmap/unrelated\n");
}

TEST_F(KubectlTest, GetWatchSeesChanges) {
  ApplyCrdAndJob();
  Background watch(KubectlArgv({"get", "adj", "-w"}), {{"HOME", dir_.path()}},
                   dir_.path() + "/watch.out", dir_.path() + "/watch.err");
  const auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 200; ++i) {
      if (ReadFile(dir_.path() + "/watch.out").find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  };
  ASSERT_TRUE(wait_for("fmnist-ps")) << ReadFile(dir_.path() + "/watch.err");
  PatchStatus({{"state", "Running"}, {"progress", {{"step", 5}}}});
  EXPECT_TRUE(wait_for("Running"));
  PatchStatus({{"state", "Succeeded"}, {"progress", {{"step", 9}}}});
  EXPECT_TRUE(wait_for("Succeeded"));
  watch.Stop();
  const std::string out = ReadFile(dir_.path() + "/watch.out");
  EXPECT_TRUE(std::regex_search(out, std::regex("\nfmnist-ps +Running +5 ")) ||
              std::regex_search(out, std::regex("\nfmnist-ps +Running .* 5 ")))
      << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n') >= 3, true) << out;
  EXPECT_EQ(out.rfind("NAME", 0), 0u);  // one header, then rows
  EXPECT_EQ(out.find("NAME", 1), std::string::npos) << out;
}

TEST_F(KubectlTest, ThrottlingIsRetriedAndErrorsAreReported) {
  ApplyCrdAndJob();
  HttpCall(url_, "POST", "/_testdouble/faults",
           nlohmann::json{{"failures",
                           {{{"verb", "get"},
                             {"resource", "autodistjobs"},
                             {"code", 429},
                             {"retryAfterSeconds", 1},
                             {"count", 2}}}}}
               .dump());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(Ok({"get", "adj", "fmnist-ps", "-o", "name"}).find("fmnist-ps"), std::string::npos);
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::seconds(2));  // Retry-After honoured

  HttpCall(
      url_, "POST", "/_testdouble/faults",
      nlohmann::json{{"failures", {{{"verb", "get"}, {"resource", "autodistjobs"}, {"code", 500}}}}}
          .dump());
  const CommandResult failed = Kubectl({"get", "adj", "fmnist-ps"});
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_NE(failed.err.find("Error from server (InternalError)"), std::string::npos) << failed.err;
  const auto stats = HttpCall(url_, "GET", "/_testdouble/stats").body;
  EXPECT_EQ(stats["faultsInjected"], 3);
  EXPECT_GE(stats["requests"]["get"]["autodistjobs.autodist.io"].get<int>(), 4);
}

TEST_F(KubectlTest, LegacyDiscoveryAndExplain) {
  server_->Stop();
  StartServer({"--legacy-discovery"});
  ApplyCrdAndJob();
  const std::string resources = Ok({"api-resources", "--api-group=autodist.io"});
  EXPECT_TRUE(std::regex_search(
      resources, std::regex("autodistjobs +adj +autodist.io/v1alpha1 +true +AutoDistJob")))
      << resources;
  EXPECT_NE(Ok({"explain", "adj.spec"}).find("KIND:       AutoDistJob"), std::string::npos);
  EXPECT_NE(Ok({"get", "all"}).find("autodistjob.autodist.io/fmnist-ps"), std::string::npos);
  // Strict field validation: kubectl sends fieldValidation=Strict and unknown fields fail.
  std::string manifest = ReadFile(kJobManifest);
  manifest = std::regex_replace(manifest, std::regex("\nspec:\n"), "\nspec:\n  bogusField: 1\n");
  WriteFile(dir_.path() + "/bad.yaml", manifest);
  const CommandResult bad = Kubectl({"apply", "-f", dir_.path() + "/bad.yaml"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("unknown field \"spec.bogusField\""), std::string::npos) << bad.err;
}

TEST_F(KubectlTest, NodeAgentModeRunsPodsAndDeliversSigterm) {
  server_->Stop();
  StartServer({"--node-agent", "--image-entrypoint", "sleeper=/bin/sleep"});
  // The server blocks SIGTERM for itself; the container must still get it on deletion (sleep,
  // unlike a shell, does not unblock signals itself).
  WriteFile(dir_.path() + "/pod.yaml", R"(apiVersion: v1
kind: Pod
metadata: {name: trapper}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - {name: main, image: "sleeper:v1", args: ["30"]}
)");
  Ok({"apply", "-f", dir_.path() + "/pod.yaml"});
  Ok({"wait", "--for=condition=Ready", "pod/trapper", "--timeout=20s"});
  const std::string id =
      Ok({"get", "pod", "trapper", "-o", "jsonpath={.status.containerStatuses[0].containerID}"});
  ASSERT_EQ(id.rfind("fake-kubelet://", 0), 0u) << id;
  const pid_t pid = std::stoi(id.substr(std::string("fake-kubelet://").size()));
  ASSERT_EQ(::kill(pid, 0), 0);
  const auto start = std::chrono::steady_clock::now();
  Ok({"delete", "pod", "trapper"});
  while (::kill(pid, 0) == 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(::kill(pid, 0), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace autodist::k8s
