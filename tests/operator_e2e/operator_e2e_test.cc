// The operator end to end, as a user drives it: real kubectl applies the CRD and a Fashion-MNIST
// job (2 workers + 1 parameter server, a few steps) to the API-server test double; the
// AutoDistJob controller compiles it and creates its ConfigMap, Service and pods; the node agent
// runs each pod's autodist-runtime as a local process; `kubectl wait` sees Succeeded; deleting
// the job removes its children.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "operator/app/job_controller.h"
#include "operator/app/log.h"
#include "operator/controller/metrics.h"
#include "operator/controller/operator_metrics.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"
#include "tests/k8s/test_api_server.h"

namespace autodist::app {
namespace {

namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), read);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// A Fashion-MNIST job of `steps` steps: 2 workers and 1 parameter server.
std::string FashionMnistJob(const std::string& name, int steps, const std::string& checkpoints) {
  return "apiVersion: autodist.io/v1alpha1\n"
         "kind: AutoDistJob\n"
         "metadata:\n"
         "  name: " +
         name +
         "\n"
         "spec:\n"
         "  model:\n"
         "    path: " AUTODIST_SOURCE_DIR
         "/examples/fashion-mnist/fmnist_mlp.onnx\n"
         "    loss: loss\n"
         "    logits: logits\n"
         "    labels: label\n"
         "  data:\n"
         "    format: fashion-mnist\n"
         "    batchSizePerReplica: 32\n"
         "  training:\n"
         "    steps: " +
         std::to_string(steps) +
         "\n"
         "    optimizer:\n"
         "      name: adam\n"
         "      lr: 0.001\n"
         "    logIntervalSteps: 10\n"
         "    checkpoint:\n"
         "      path: " +
         checkpoints +
         "\n"
         "      intervalSteps: 10\n"
         "  strategy:\n"
         "    builder: PS\n"
         "  resources:\n"
         "    workers: 2\n"
         "    parameterServers: 1\n"
         "  runPolicy:\n"
         "    backoffLimit: 1\n"
         "    cleanPodPolicy: None\n";
}

class OperatorEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    // kubectl is the machine's (BRIEF: the tools tests use); without it there is no end to end.
    if (!fs::exists("/usr/bin/kubectl")) GTEST_SKIP() << "no /usr/bin/kubectl";
    root_ = fs::path(::testing::TempDir()) /
            ("operator-e2e-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    // The pods run `autodist-runtime` from PATH, as in the runtime image.
    const char* path = std::getenv("PATH");
    setenv("PATH", (std::string(AUTODIST_BIN_DIR) + ":" + (path ? path : "")).c_str(), 1);

    k8s::TestApiServerOptions server_options;
    server_options.node_agent = true;
    server_options.agent.host_volume_root = root_.string();
    server_options.agent.log_dir = (root_ / "pod-logs").string();
    server_options.agent.max_grace = std::chrono::milliseconds(2000);
    server_ = std::make_unique<k8s::TestApiServer>(server_options);
    server_->CreateFromFile(k8s::AutoDistJobCrdPath());
    kubectl_ = "kubectl --kubeconfig " + server_->kubeconfig_path() + " ";

    ConfigureLogging("text", "warn");
    options_.workers = 2;
    options_.address_mode = "local-processes";
    options_.progress_interval = std::chrono::milliseconds(500);
    options_.reconciler.runtime_image = "autodist/autodist-runtime:e2e";
    options_.reconciler.config_mount_path = (root_ / "autodist-config").string();
    options_.reconciler.model_mount_path = (root_ / "autodist-model").string();
    options_.reconciler.working_dir = root_.string();
    FinishOperatorOptions(options_);
    StartOperator();
  }

  void TearDown() override {
    if (root_.empty()) return;  // skipped
    jobs_.reset();
    client_.reset();
    server_.reset();
    fs::remove_all(root_);
  }

  void StartOperator() {
    registry_ = std::make_unique<controller::Registry>();
    metrics_ = std::make_unique<controller::OperatorMetrics>(*registry_);
    client_ = std::make_unique<kube::Client>(kube::LoadKubeconfig(server_->kubeconfig_path()));
    jobs_ = std::make_unique<JobController>(*client_, options_, *metrics_);
    jobs_->Start();
  }

  std::string Apply(const std::string& manifest) {
    const fs::path file = root_ / "job.yaml";
    std::ofstream(file) << manifest;
    const CommandResult applied = RunCommand(kubectl_ + "apply -f " + file.string());
    EXPECT_EQ(applied.exit_code, 0) << applied.output;
    return applied.output;
  }

  std::string PodLogs() {
    std::string logs;
    for (const auto& entry : fs::recursive_directory_iterator(root_ / "pod-logs")) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path());
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      logs += "== " + entry.path().string() + "\n" +
              text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
    }
    return logs;
  }

  int CountChildren(const std::string& job) {
    int count = 0;
    const std::string selector = "autodist.io/job-name=" + job;
    kube::ListOptions options;
    options.label_selector = selector;
    for (const kube::Resource& resource :
         {kube::resources::kPods, kube::resources::kServices, kube::resources::kConfigMaps}) {
      count += static_cast<int>(client_->List(resource, "default", options)["items"].size());
    }
    return count;
  }

  fs::path root_;
  std::unique_ptr<k8s::TestApiServer> server_;
  std::string kubectl_;
  OperatorOptions options_;
  std::unique_ptr<controller::Registry> registry_;
  std::unique_ptr<controller::OperatorMetrics> metrics_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<JobController> jobs_;
};

TEST_F(OperatorEndToEnd, FashionMnistJobSucceedsAndDeletingItRemovesItsChildren) {
  Apply(FashionMnistJob("fmnist-e2e", 30, (root_ / "ckpt").string()));
  const CommandResult waited =
      RunCommand(kubectl_ + "wait --for=condition=Succeeded adj/fmnist-e2e --timeout=240s");
  ASSERT_EQ(waited.exit_code, 0) << waited.output << "\n"
                                 << RunCommand(kubectl_ + "get adj fmnist-e2e -o yaml").output
                                 << RunCommand(kubectl_ + "get pods -o wide").output << PodLogs();

  // kubectl get adj: the CRD's printer columns, filled from the status.
  const CommandResult listed = RunCommand(kubectl_ + "get adj");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  for (const char* column : {"NAME", "STATE", "BUILDER", "WORKERS", "PS", "STEP", "AGE"}) {
    EXPECT_NE(listed.output.find(column), std::string::npos) << listed.output;
  }
  EXPECT_NE(listed.output.find("fmnist-e2e"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("Succeeded"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("PS"), std::string::npos) << listed.output;

  const nlohmann::json job = client_->Get(kube::resources::kAutoDistJobs, "default", "fmnist-e2e");
  const nlohmann::json& status = job.at("status");
  EXPECT_EQ(status.value("state", ""), "Succeeded") << status.dump(2);
  EXPECT_EQ(status.at("replicaStatuses").at("Worker").value("succeeded", 0), 2) << status.dump(2);
  EXPECT_TRUE(status.contains("completionTime")) << status.dump(2);
  EXPECT_EQ(status.at("strategy").value("builder", ""), "PS") << status.dump(2);
  // It trained for real: the chief wrote its checkpoints, the last at the final step.
  ASSERT_TRUE(fs::exists(root_ / "ckpt")) << PodLogs();
  bool final_checkpoint = false;
  for (const auto& entry : fs::recursive_directory_iterator(root_ / "ckpt")) {
    if (entry.path().filename().string().find("30") != std::string::npos) final_checkpoint = true;
  }
  EXPECT_TRUE(final_checkpoint) << PodLogs();
  EXPECT_GT(CountChildren("fmnist-e2e"), 0);
  EXPECT_EQ(metrics_->jobs_successful.With({"default"}).Value(), 1);

  const CommandResult deleted = RunCommand(kubectl_ + "delete adj fmnist-e2e --wait=true");
  ASSERT_EQ(deleted.exit_code, 0) << deleted.output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (CountChildren("fmnist-e2e") > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(CountChildren("fmnist-e2e"), 0);
}

}  // namespace
}  // namespace autodist::app
