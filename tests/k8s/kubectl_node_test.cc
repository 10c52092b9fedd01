// The real kubectl against TestApiServer with the node agent: pods run, `kubectl wait` sees their
// phase, `kubectl logs` their output, `kubectl delete` stops them; nodes and PodGroups print;
// the imperative `kubectl create` commands (protobuf bodies) work.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <regex>
#include <thread>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::CommandResult;

class KubectlNodeTest : public ::testing::Test {
 protected:
  KubectlNodeTest() : server_(Options()) {}

  static TestApiServerOptions Options() {
    TestApiServerOptions options;
    options.node_agent = true;
    return options;
  }

  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/kubectl")) GTEST_SKIP() << "no /usr/bin/kubectl";
  }
  void TearDown() override { server_.node_agent()->CheckHealthy(); }

  // kubectl that must succeed; returns its stdout.
  std::string Ok(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/kubectl", "--kubeconfig", server_.kubeconfig_path(),
                                     "--cache-dir", dir_.path() + "/cache"};
    argv.insert(argv.end(), args.begin(), args.end());
    const CommandResult r = testing::Run(argv, {{"HOME", dir_.path()}});
    EXPECT_EQ(r.exit_code, 0) << "kubectl " << ::testing::PrintToString(args) << "\n" << r.err;
    return r.out;
  }

  std::string Apply(const std::string& yaml) {
    const std::string file = dir_.path() + "/manifest.yaml";
    testing::WriteFile(file, yaml);
    return Ok({"apply", "-f", file});
  }

  testing::TempDir dir_;
  TestApiServer server_;
};

TEST_F(KubectlNodeTest, PodRunsToCompletionAndLogs) {
  Apply(R"(apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    command: [/bin/sh, -c, 'echo "hello from $POD"']
    env:
    - name: POD
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
)");
  EXPECT_NE(Ok({"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/hello", "--timeout=20s"})
                .find("condition met"),
            std::string::npos);
  EXPECT_EQ(Ok({"logs", "hello"}), "hello from hello\n");
  const std::string pods = Ok({"get", "pods", "-o", "wide"});
  EXPECT_TRUE(std::regex_search(
      pods, std::regex("\nhello +0/1 +Completed +0 +[0-9]+s +127\\.0\\.0\\.1 +fake-node")))
      << pods;
  const std::string nodes = Ok({"get", "nodes"});
  EXPECT_TRUE(std::regex_search(nodes, std::regex("\nfake-node +Ready +<none> +[0-9]+s"))) << nodes;
}

TEST_F(KubectlNodeTest, DeleteStopsTheRunningContainer) {
  Apply(R"(apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  containers:
  - {name: main, image: busybox:1.36, command: [sleep, "30"]}
)");
  Ok({"wait", "--for=condition=Ready", "pod/sleeper", "--timeout=20s"});
  EXPECT_EQ(server_.node_agent()->running_containers(), 1u);
  const auto start = std::chrono::steady_clock::now();
  Ok({"delete", "pod", "sleeper", "--wait=false"});
  while (server_.node_agent()->running_containers() > 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server_.node_agent()->running_containers(), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST_F(KubectlNodeTest, PodGroupsPrintWithTheirColumns) {
  Ok({"apply", "-f", PodGroupCrdPath()});
  Apply(R"(apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: fmnist}
spec: {minMember: 3, scheduleTimeoutSeconds: 60}
)");
  const std::string table = Ok({"get", "pg"});
  EXPECT_TRUE(std::regex_search(
      table, std::regex("^NAME +PHASE +MINMEMBER +RUNNING +SUCCEEDED +FAILED +AGE\nfmnist +3 ")))
      << table;
}

// kubectl's typed clients send protobuf; the double decodes these kinds.
TEST_F(KubectlNodeTest, ImperativeCreateCommands) {
  Ok({"create", "namespace", "team", "-o", "name"});
  Ok({"create", "configmap", "settings", "-n", "team", "--from-literal=lr=0.1",
      "--from-literal=steps=100"});
  Ok({"create", "secret", "generic", "token", "-n", "team", "--from-literal=key=s3cret",
      "--type=autodist.io/token"});
  Ok({"create", "serviceaccount", "runner", "-n", "team"});
  Ok({"label", "configmap", "settings", "-n", "team", "tier=test"});

  const auto cm = nlohmann::json::parse(Ok({"get", "cm", "settings", "-n", "team", "-o", "json"}));
  EXPECT_EQ(cm["data"], (nlohmann::json{{"lr", "0.1"}, {"steps", "100"}}));
  EXPECT_EQ(cm["metadata"]["labels"]["tier"], "test");
  const auto secret =
      nlohmann::json::parse(Ok({"get", "secret", "token", "-n", "team", "-o", "json"}));
  EXPECT_EQ(secret["type"], "autodist.io/token");
  EXPECT_EQ(secret["data"]["key"], "czNjcmV0");  // base64 of s3cret
  EXPECT_EQ(Ok({"get", "ns", "team", "-o", "jsonpath={.status.phase}"}), "Active");
  EXPECT_EQ(Ok({"get", "sa", "-n", "team", "-o", "name"}), "serviceaccount/runner\n");
}

}  // namespace
}  // namespace autodist::k8s
