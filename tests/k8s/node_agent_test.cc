// The node agent: pods of the double run as local processes, with the phases, container states,
// restart policies, environment and deletion behaviour of a kubelet.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "tests/k8s/api_error.h"
#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using Clock = std::chrono::steady_clock;
using testing::Call;

nlohmann::json Pod(const std::string& name, const std::vector<std::string>& command,
                   const std::string& restart_policy = "Never") {
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "default"}}},
      {"spec",
       {{"restartPolicy", restart_policy},
        {"containers", {{{"name", "main"}, {"image", "busybox:1.36"}, {"command", command}}}}}}};
}

class NodeAgentTest : public ::testing::Test {
 protected:
  NodeAgentTest() : server_(Options(root_.path())) {}

  static TestApiServerOptions Options(const std::string& host_volume_root) {
    TestApiServerOptions options;
    options.node_agent = true;
    options.agent.restart_backoff = std::chrono::milliseconds(50);
    options.agent.image_entrypoints["busybox"] = {"/bin/sh", "-c"};
    options.agent.host_volume_root = host_volume_root;
    return options;
  }

  void TearDown() override { server_.node_agent()->CheckHealthy(); }

  nlohmann::json Get(const std::string& name) {
    const ObjectPtr pod =
        server_.store().Get(*server_.store().FindResource("", "v1", "pods"), "default", name);
    return pod == nullptr ? nlohmann::json() : pod->object;
  }

  // Polls the pod until `done` holds (10 s at most); returns its last state.
  nlohmann::json WaitFor(const std::string& name,
                         const std::function<bool(const nlohmann::json&)>& done) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    nlohmann::json pod = Get(name);
    while (!done(pod) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      pod = Get(name);
    }
    EXPECT_TRUE(done(pod)) << pod.dump(2);
    return pod;
  }

  nlohmann::json WaitForPhase(const std::string& name, const std::string& phase) {
    return WaitFor(name, [&](const nlohmann::json& p) {
      return p.is_object() && p["status"].value("phase", "") == phase;
    });
  }

  static const nlohmann::json& Container(const nlohmann::json& pod, size_t i = 0) {
    return pod["status"]["containerStatuses"][i];
  }

  static pid_t Pid(const nlohmann::json& pod) {
    const std::string id = Container(pod).value("containerID", "");
    return static_cast<pid_t>(std::stol(id.substr(id.find("://") + 3)));
  }

  std::string Log(const std::string& name) {
    return Call(server_.api(), "GET", "/api/v1/namespaces/default/pods/" + name + "/log").raw;
  }

  // Mounts `volume` (a volumes[] entry) at `mount_path` in the pod's container.
  static void Mount(nlohmann::json& pod, const nlohmann::json& volume,
                    const std::string& mount_path) {
    pod["spec"]["volumes"].push_back(volume);
    pod["spec"]["containers"][0]["volumeMounts"].push_back(
        {{"name", volume["name"]}, {"mountPath", mount_path}, {"readOnly", true}});
  }

  void CreateConfigMap(const std::string& name, const nlohmann::json& data,
                       const nlohmann::json& binary_data = nullptr) {
    nlohmann::json map = {{"apiVersion", "v1"},
                          {"kind", "ConfigMap"},
                          {"metadata", {{"name", name}, {"namespace", "default"}}},
                          {"data", data}};
    if (!binary_data.is_null()) map["binaryData"] = binary_data;
    server_.Create(map);
  }

  // Waits until the container waits in CreateContainerConfigError; returns its message.
  std::string ConfigErrorOf(const std::string& name) {
    const auto pod = WaitFor(name, [](const nlohmann::json& p) {
      return p.is_object() && p["status"].contains("containerStatuses") &&
             Container(p)["state"].contains("waiting");
    });
    EXPECT_EQ(pod["status"]["phase"], "Pending");
    const auto& waiting = Container(pod)["state"]["waiting"];
    EXPECT_EQ(waiting.value("reason", ""), "CreateContainerConfigError");
    return waiting.value("message", "");
  }

  testing::TempDir root_;  // the agent's host volume root; outlives the server
  TestApiServer server_;
};

TEST_F(NodeAgentTest, NonZeroExitFailsThePod) {
  server_.Create(Pod("fails", {"/bin/sh", "-c", "echo going; exit 3"}));
  const auto pod = WaitForPhase("fails", "Failed");
  const auto& terminated = Container(pod)["state"]["terminated"];
  EXPECT_EQ(terminated["exitCode"], 3);
  EXPECT_EQ(terminated["reason"], "Error");
  EXPECT_FALSE(terminated.value("finishedAt", "").empty());
  EXPECT_EQ(pod["status"]["podIP"], "127.0.0.1");
  EXPECT_EQ(pod["spec"]["nodeName"], "fake-node");
  EXPECT_EQ(Container(pod)["restartCount"], 0);
  EXPECT_EQ(Log("fails"), "going\n");
}

TEST_F(NodeAgentTest, ZeroExitSucceedsAndReportsRunningFirst) {
  auto sink = std::make_shared<testing::MemorySink>();
  auto watch = testing::StartWatch(server_.api(), "/api/v1/namespaces/default/pods?watch=1", sink);
  server_.Create(Pod("ok", {"/bin/true"}));
  const auto pod = WaitForPhase("ok", "Succeeded");
  EXPECT_EQ(Container(pod)["state"]["terminated"]["exitCode"], 0);
  EXPECT_EQ(Container(pod)["state"]["terminated"]["reason"], "Completed");
  for (const auto& c : pod["status"]["conditions"]) {
    if (c["type"] == "Ready") {
      EXPECT_EQ(c["reason"], "PodCompleted");
    }
  }
  // The phases a client watching the pod saw, in order.
  std::vector<std::string> phases;
  for (const auto& e : sink->Events()) {
    const std::string phase = e["object"]["status"].value("phase", "");
    if (phases.empty() || phases.back() != phase) phases.push_back(phase);
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"Pending", "Running", "Succeeded"}));
  watch->Stop();
}

TEST_F(NodeAgentTest, DeletingARunningPodStopsItReportsTheEndThenRemovesIt) {
  auto sink = std::make_shared<testing::MemorySink>();
  auto watch = testing::StartWatch(server_.api(), "/api/v1/namespaces/default/pods?watch=1", sink);
  server_.Create(Pod("sleeper", {"sleep", "30"}));
  const auto pod = WaitForPhase("sleeper", "Running");
  EXPECT_TRUE(Container(pod)["state"].contains("running"));
  EXPECT_TRUE(Container(pod)["ready"].get<bool>());
  const pid_t pid = Pid(pod);
  ASSERT_EQ(::kill(pid, 0), 0);
  EXPECT_EQ(server_.node_agent()->running_containers(), 1u);

  const auto start = Clock::now();
  // Graceful: the pod stays, Terminating, until the node has stopped it.
  const testing::Reply deleted =
      Call(server_.api(), "DELETE", "/api/v1/namespaces/default/pods/sleeper");
  ASSERT_EQ(deleted.status, 202) << deleted.body.dump(2);
  EXPECT_EQ(deleted.body["metadata"]["deletionGracePeriodSeconds"], 30);
  WaitFor("sleeper", [](const nlohmann::json& p) { return p.is_null(); });
  // SIGTERM, not the 30 s grace period's SIGKILL, ended it (the bound leaves room for a busy
  // machine while staying well under the grace period).
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(15));
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: the pid is gone
  // (The agent counts its containers once per pass, just after the deletion.)
  while (server_.node_agent()->running_containers() > 0 &&
         Clock::now() - start < std::chrono::seconds(15)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(server_.node_agent()->running_containers(), 0u);
  // What a watcher saw: Running, Terminating, the container's end (SIGTERM: Failed, 143), gone.
  const std::vector<nlohmann::json> events = sink->Events();  // delivered as written
  ASSERT_GE(events.size(), 3u);
  const nlohmann::json& last = events.back();
  EXPECT_EQ(last["type"], "DELETED");
  EXPECT_EQ(last["object"]["status"]["phase"], "Failed");
  EXPECT_EQ(Container(last["object"])["state"]["terminated"]["exitCode"], 143);
  const nlohmann::json& before = events[events.size() - 2]["object"];
  EXPECT_TRUE(before["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(before["status"]["phase"], "Failed");
  watch->Stop();
}

TEST_F(NodeAgentTest, ALostNodesPodsStayAsLastReportedAndADeletionNeverEnds) {
  server_.Create(Pod("lost", {"sleep", "30"}));
  const pid_t pid = Pid(WaitForPhase("lost", "Running"));
  server_.LoseNode("node-2");
  EXPECT_NE(::kill(pid, 0), 0);  // the node's containers ended with it
  ASSERT_EQ(Call(server_.api(), "DELETE", "/api/v1/namespaces/default/pods/lost").status, 202);
  // No kubelet finishes the deletion: Terminating, and Running as last reported.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const nlohmann::json pod = Get("lost");
  ASSERT_TRUE(pod.is_object());
  EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(pod["spec"]["nodeName"], "fake-node");
  // The new node runs what is created now; a forced deletion ends the old pod.
  server_.Create(Pod("fresh", {"/bin/true"}));
  EXPECT_EQ(WaitForPhase("fresh", "Succeeded")["spec"]["nodeName"], "node-2");
  EXPECT_EQ(
      Call(server_.api(), "DELETE", "/api/v1/namespaces/default/pods/lost?gracePeriodSeconds=0")
          .status,
      200);
  EXPECT_TRUE(Get("lost").is_null());
}

TEST_F(NodeAgentTest, ProcessIgnoringSigtermIsKilledAfterTheGracePeriod) {
  auto pod = Pod("stubborn", {"/bin/sh", "-c", "trap '' TERM; echo ready; sleep 30"});
  pod["spec"]["terminationGracePeriodSeconds"] = 1;
  server_.Create(pod);
  WaitFor("stubborn", [&](const nlohmann::json&) { return Log("stubborn") == "ready\n"; });
  const auto start = Clock::now();
  Call(server_.api(), "DELETE", "/api/v1/namespaces/default/pods/stubborn");
  while (server_.node_agent()->running_containers() > 0 &&
         Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto took = Clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(900));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST_F(NodeAgentTest, EnvironmentFieldRefsExpansionAndWorkingDir) {
  testing::TempDir dir;
  auto pod = Pod("env", {"/bin/sh", "-c"});
  auto& c = pod["spec"]["containers"][0];
  c["args"] = {
      "echo \"$NAME $NS $IP $GREETING $(pwd) $ROLE\"; echo '$(GREETING) $$(GREETING) $(UNSET)'"};
  c["workingDir"] = dir.path();
  pod["metadata"]["labels"] = {{"role", "worker"}};
  c["env"] = {
      {{"name", "NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}},
      {{"name", "NS"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}}},
      {{"name", "IP"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
      {{"name", "ROLE"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['role']"}}}}}},
      {{"name", "WHO"}, {"value", "world"}},
      {{"name", "GREETING"}, {"value", "hello-$(WHO)"}}};
  server_.Create(pod);
  WaitForPhase("env", "Succeeded");
  // The agent expands $(GREETING) in args before the shell runs; $$ escapes it, and unknown
  // names ($(UNSET), and $(pwd), which the shell then runs) stay as written.
  EXPECT_EQ(Log("env"), "env default 127.0.0.1 hello-world " + dir.path() +
                            " worker\nhello-world $(GREETING) $(UNSET)\n");
}

TEST_F(NodeAgentTest, KubernetesServiceVariablesPointAtTheDouble) {
  server_.Create(
      Pod("svc", {"/bin/sh", "-c", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"}));
  WaitForPhase("svc", "Succeeded");
  EXPECT_EQ(Log("svc"), "127.0.0.1:" + std::to_string(server_.port()) + "\n");
}

TEST_F(NodeAgentTest, OnFailureRestartsUntilTheContainerSucceeds) {
  testing::TempDir dir;
  // Fails twice, then succeeds: the count survives restarts in the working directory.
  auto pod = Pod("flaky",
                 {"/bin/sh", "-c",
                  "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; "
                  "test $n -ge 2"},
                 "OnFailure");
  pod["spec"]["containers"][0]["workingDir"] = dir.path();
  server_.Create(pod);
  const auto done = WaitForPhase("flaky", "Succeeded");
  EXPECT_EQ(Container(done)["restartCount"], 2);
  EXPECT_EQ(Container(done)["lastState"]["terminated"]["exitCode"], 1);
  EXPECT_EQ(testing::ReadFile(dir.path() + "/count"), "3\n");
}

TEST_F(NodeAgentTest, AlwaysRestartsEvenAfterSuccess) {
  server_.Create(Pod("looping", {"/bin/true"}, "Always"));
  const auto pod = WaitFor("looping", [](const nlohmann::json& p) {
    return p.is_object() && p["status"].contains("containerStatuses") &&
           Container(p)["restartCount"].get<int>() >= 2;
  });
  EXPECT_EQ(pod["status"]["phase"], "Running");
  EXPECT_EQ(Container(pod)["lastState"]["terminated"]["reason"], "Completed");
}

TEST_F(NodeAgentTest, ContainersThatCannotStart) {
  server_.Create(Pod("missing", {"/no/such/program"}));
  const auto failed = WaitForPhase("missing", "Failed");
  EXPECT_EQ(Container(failed)["state"]["terminated"]["reason"], "StartError");
  EXPECT_EQ(Container(failed)["state"]["terminated"]["exitCode"], 128);

  server_.Create(Pod("not-on-path", {"no-such-program-on-path"}));
  const auto not_found = WaitForPhase("not-on-path", "Failed");
  EXPECT_NE(Container(not_found)["state"]["terminated"]["message"].get<std::string>().find(
                "executable file not found in $PATH"),
            std::string::npos);

  // No command and an image the agent has no entrypoint for: waits, as a kubelet does on a
  // config error, and says why.
  auto pod = Pod("no-command", {});
  pod["spec"]["containers"][0].erase("command");
  pod["spec"]["containers"][0]["image"] = "unknown/image:v1";
  server_.Create(pod);
  const auto waiting = WaitFor("no-command", [](const nlohmann::json& p) {
    return p.is_object() && p["status"].contains("containerStatuses");
  });
  EXPECT_EQ(waiting["status"]["phase"], "Pending");
  EXPECT_EQ(Container(waiting)["state"]["waiting"]["reason"], "CreateContainerConfigError");
}

TEST_F(NodeAgentTest, ImageEntrypointStandsInForAMissingCommand) {
  auto pod = Pod("entry", {});
  pod["spec"]["containers"][0].erase("command");
  pod["spec"]["containers"][0]["args"] = {"echo from-entrypoint"};
  server_.Create(pod);
  WaitForPhase("entry", "Succeeded");
  EXPECT_EQ(Log("entry"), "from-entrypoint\n");
}

TEST_F(NodeAgentTest, RunsTheAutodistRuntimeContainerOfAPod) {
  auto pod = Pod("sidecar", {"sleep", "30"});
  pod["spec"]["containers"].push_back({{"name", "autodist-runtime"},
                                       {"image", "autodist-runtime:dev"},
                                       {"command", {"/bin/true"}}});
  server_.Create(pod);
  const auto done = WaitForPhase("sidecar", "Succeeded");
  EXPECT_EQ(Container(done, 0)["state"]["waiting"]["reason"], "NotRunByNodeAgent");
  EXPECT_EQ(Container(done, 1)["name"], "autodist-runtime");
  EXPECT_EQ(Container(done, 1)["state"]["terminated"]["exitCode"], 0);
  // pods/log needs the container when a pod has several.
  EXPECT_EQ(Call(server_.api(), "GET", "/api/v1/namespaces/default/pods/sidecar/log").status, 400);
  EXPECT_EQ(Call(server_.api(), "GET",
                 "/api/v1/namespaces/default/pods/sidecar/log?container=autodist-runtime")
                .status,
            200);
}

TEST_F(NodeAgentTest, PodsOfOtherNodesAreLeftAlone) {
  auto pod = Pod("elsewhere", {"/bin/true"});
  pod["spec"]["nodeName"] = "other-node";
  server_.Create(pod);
  server_.Create(Pod("here", {"/bin/true"}));
  WaitForPhase("here", "Succeeded");  // the agent has seen both by now
  const auto other = Get("elsewhere");
  EXPECT_EQ(other["status"]["phase"], "Pending");
  EXPECT_FALSE(other["status"].contains("containerStatuses"));
}

TEST_F(NodeAgentTest, SurvivesDroppedWatches) {
  server_.Create(Pod("first", {"sleep", "30"}));
  const pid_t pid = Pid(WaitForPhase("first", "Running"));
  server_.faults().Configure({{"reset", true}});
  server_.store().CloseAllWatches();
  server_.Create(Pod("second", {"/bin/true"}));
  WaitForPhase("second", "Succeeded");  // seen through the new watch
  Call(server_.api(), "DELETE", "/api/v1/namespaces/default/pods/first");
  const auto start = Clock::now();
  while (::kill(pid, 0) == 0 && Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST_F(NodeAgentTest, RegistersItsNodeAndIgnoresInjectedFaults) {
  const auto node = Call(server_.api(), "GET", "/api/v1/nodes/fake-node");
  ASSERT_EQ(node.status, 200);
  EXPECT_EQ(node.body["status"]["conditions"][0]["type"], "Ready");
  // Faults are for the operator under test; the node's own writes never see them.
  server_.faults().Configure({{"failures", {{{"verb", "*"}, {"code", 500}, {"count", 1000}}}}});
  server_.Create(Pod("despite-faults", {"/bin/true"}));
  WaitForPhase("despite-faults", "Succeeded");
}

TEST_F(NodeAgentTest, ConfigMapVolumeIsWrittenAtItsMountPathUnderTheRoot) {
  const std::string dir = root_.path() + "/default/job/x";
  CreateConfigMap("job-config", {{"job.yaml", "hello"}}, {{"blob.bin", "AAFiaW4="}});
  auto pod = Pod(
      "reader",
      {"/bin/sh", "-c", "cat " + dir + "/job.yaml; test \"$(cat " + dir + "/job.yaml)\" = hello"});
  Mount(pod, {{"name", "config"}, {"configMap", {{"name", "job-config"}, {"defaultMode", 0640}}}},
        dir);
  // items map keys to paths (and modes); only the listed keys are projected.
  Mount(pod,
        {{"name", "renamed"},
         {"configMap",
          {{"name", "job-config"},
           {"items", {{{"key", "job.yaml"}, {"path", "conf/spec.yaml"}, {"mode", 0600}}}}}}},
        root_.path() + "/default/job/renamed");
  server_.Create(pod);
  WaitForPhase("reader", "Succeeded");
  EXPECT_EQ(Log("reader"), "hello");
  EXPECT_EQ(testing::ReadFile(dir + "/blob.bin"), std::string("\0\x01", 2) + "bin");  // decoded
  struct stat info {};
  ASSERT_EQ(::stat((dir + "/job.yaml").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
  const std::string renamed = root_.path() + "/default/job/renamed/conf/spec.yaml";
  EXPECT_EQ(testing::ReadFile(renamed), "hello");
  ASSERT_EQ(::stat(renamed.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_FALSE(std::filesystem::exists(root_.path() + "/default/job/renamed/blob.bin"));
}

TEST_F(NodeAgentTest, VolumeOutsideTheHostRootIsAConfigError) {
  auto pod = Pod("outside", {"/bin/true"});
  Mount(pod, {{"name", "config"}, {"configMap", {{"name", "any"}}}}, "/etc/autodist-test");
  server_.Create(pod);
  const std::string message = ConfigErrorOf("outside");
  EXPECT_NE(message.find("'/etc/autodist-test'"), std::string::npos) << message;
  EXPECT_NE(message.find("host volume root '" + root_.path() + "'"), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists("/etc/autodist-test"));
}

TEST_F(NodeAgentTest, MissingConfigMapWaitsUntilItIsCreated) {
  const std::string dir = root_.path() + "/default/late";
  auto pod = Pod("patient", {"/bin/sh", "-c", "cat " + dir + "/v"});
  Mount(pod, {{"name", "config"}, {"configMap", {{"name", "late"}}}}, dir);
  server_.Create(pod);
  const std::string message = ConfigErrorOf("patient");
  EXPECT_NE(message.find("configmap \"late\" not found"), std::string::npos) << message;
  // The retries (every 100 ms) write nothing while nothing changes: no events for watchers.
  const std::string rv = Get("patient")["metadata"]["resourceVersion"];
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(Get("patient")["metadata"]["resourceVersion"], rv);
  CreateConfigMap("late", {{"v", "finally"}});
  const auto done = WaitForPhase("patient", "Succeeded");
  EXPECT_EQ(Container(done)["restartCount"], 0);
  EXPECT_EQ(Log("patient"), "finally");
}

TEST_F(NodeAgentTest, RestartedContainerSeesTheConfigMapsCurrentContent) {
  const std::string dir = root_.path() + "/default/changing";
  CreateConfigMap("changing", {{"v", "one"}, {"old", "stale"}});
  // Fails until the ConfigMap says "two"; the files are rewritten before every restart.
  auto pod = Pod("follower",
                 {"/bin/sh", "-c", "cat " + dir + "/v; echo; test \"$(cat " + dir + "/v)\" = two"},
                 "OnFailure");
  Mount(pod, {{"name", "config"}, {"configMap", {{"name", "changing"}}}}, dir);
  server_.Create(pod);
  WaitFor("follower", [&](const nlohmann::json&) { return Log("follower").starts_with("one\n"); });
  ASSERT_EQ(Call(server_.api(), "PATCH", "/api/v1/namespaces/default/configmaps/changing",
                 {{"data", {{"v", "two"}, {"old", nullptr}}}}, "application/merge-patch+json")
                .status,
            200);
  WaitForPhase("follower", "Succeeded");
  EXPECT_TRUE(Log("follower").ends_with("two\n")) << Log("follower");
  EXPECT_FALSE(std::filesystem::exists(dir + "/old"));  // a key removed is a file removed
}

TEST_F(NodeAgentTest, EmptyDirIsCreatedUnderTheRoot) {
  const std::string dir = root_.path() + "/default/job/scratch";
  auto pod = Pod("scratch", {"/bin/sh", "-c", "echo data > " + dir + "/out"});
  Mount(pod, {{"name", "scratch"}, {"emptyDir", nlohmann::json::object()}}, dir);
  server_.Create(pod);
  WaitForPhase("scratch", "Succeeded");
  EXPECT_EQ(testing::ReadFile(dir + "/out"), "data\n");
}

TEST_F(NodeAgentTest, EnvFromConfigMapsAndSecrets) {
  CreateConfigMap("settings", {{"mode", "fast"}, {"LEVEL", "3"}});
  server_.Create({{"apiVersion", "v1"},
                  {"kind", "Secret"},
                  {"metadata", {{"name", "creds"}, {"namespace", "default"}}},
                  {"stringData", {{"token", "s3cret"}}}});
  auto pod = Pod("env-refs", {"/bin/sh", "-c",
                              "echo \"$MODE|$TOKEN|${OPT-unset}|${OPT_KEY-unset}|$CFG_LEVEL\""});
  const auto key_ref = [](const char* kind, const char* name, const char* key, bool optional) {
    return nlohmann::json{{kind, {{"name", name}, {"key", key}, {"optional", optional}}}};
  };
  pod["spec"]["containers"][0]["env"] = {
      {{"name", "MODE"}, {"valueFrom", key_ref("configMapKeyRef", "settings", "mode", false)}},
      {{"name", "TOKEN"}, {"valueFrom", key_ref("secretKeyRef", "creds", "token", false)}},
      {{"name", "OPT"}, {"valueFrom", key_ref("configMapKeyRef", "missing", "x", true)}},
      {{"name", "OPT_KEY"}, {"valueFrom", key_ref("configMapKeyRef", "settings", "nope", true)}}};
  pod["spec"]["containers"][0]["envFrom"] = {
      {{"prefix", "CFG_"}, {"configMapRef", {{"name", "settings"}}}}};
  server_.Create(pod);
  WaitForPhase("env-refs", "Succeeded");
  EXPECT_EQ(Log("env-refs"), "fast|s3cret|unset|unset|3\n");

  // Not optional and missing: waits, with the kubelet's message.
  auto missing = Pod("env-missing", {"/bin/true"});
  missing["spec"]["containers"][0]["env"] = {
      {{"name", "K"}, {"valueFrom", key_ref("configMapKeyRef", "settings", "nope", false)}}};
  server_.Create(missing);
  EXPECT_NE(
      ConfigErrorOf("env-missing").find("couldn't find key nope in ConfigMap default/settings"),
      std::string::npos);
}

TEST(NodeAgentGangTest, AVolcanoGangIsBoundOnlyOnceAllOfItExists) {
  TestApiServerOptions options;
  options.node_agent = true;
  options.agent.image_entrypoints["busybox"] = {"/bin/sh", "-c"};
  options.agent.gang_schedulers["volcano"] = GangScheduler::Volcano();
  TestApiServer server(options);
  server.CreateFromFile(VolcanoPodGroupCrdPath());
  const auto member = [](const std::string& name) {
    nlohmann::json pod = Pod(name, {"sleep", "30"});
    pod["metadata"]["annotations"] = {{"scheduling.k8s.io/group-name", "gang"}};
    pod["spec"]["schedulerName"] = "volcano";
    return pod;
  };
  const auto node_of = [&](const std::string& name) {
    const ObjectPtr pod =
        server.store().Get(*server.store().FindResource("", "v1", "pods"), "default", name);
    return pod == nullptr ? std::string("?") : pod->object["spec"].value("nodeName", std::string());
  };
  server.Create(member("a"));
  // No PodGroup yet, then a PodGroup of two with one member: nobody is bound.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(node_of("a"), "");
  server.Create({{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                 {"kind", "PodGroup"},
                 {"metadata", {{"name", "gang"}}},
                 {"spec", {{"minMember", 2}}}});
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // past the agent's re-check
  EXPECT_EQ(node_of("a"), "");
  server.Create(member("b"));
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while ((node_of("a").empty() || node_of("b").empty()) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(node_of("a"), "fake-node");
  EXPECT_EQ(node_of("b"), "fake-node");
  server.node_agent()->CheckHealthy();
}

TEST(NodeAgentGangTest, TheFakeApiserverRefusesAnUnknownGangScheduler) {
  const testing::CommandResult run = testing::Run(
      {AUTODIST_FAKE_APISERVER, "--port", "0", "--node-agent", "--gang-scheduler", "slurm"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("--gang-scheduler 'slurm': expected volcano, or NAME=volcano or "
                         "NAME=scheduler-plugins"),
            std::string::npos)
      << run.err;
}

TEST(TestApiServer, ServesHttpWithAKubeconfigAndCreatesFromFiles) {
  TestApiServer server;
  EXPECT_EQ(server.node_agent(), nullptr);
  EXPECT_EQ(server.url(), "http://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_NE(testing::ReadFile(server.kubeconfig_path()).find("server: " + server.url()),
            std::string::npos);
  const auto crds = server.CreateFromFile(AutoDistJobCrdPath());
  ASSERT_EQ(crds.size(), 1u);
  EXPECT_EQ(crds[0]["metadata"]["name"], "autodistjobs.autodist.io");
  server.CreateFromFile(PodGroupCrdPath());
  const auto group = server.Create({{"apiVersion", "scheduling.x-k8s.io/v1alpha1"},
                                    {"kind", "PodGroup"},
                                    {"metadata", {{"name", "job"}}},
                                    {"spec", {{"minMember", 3}}}});
  EXPECT_EQ(group["metadata"]["namespace"], "default");
  const auto listed = testing::HttpCall(
      server.url(), "GET", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups");
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body["items"][0]["spec"]["minMember"], 3);
  try {
    server.Create({{"apiVersion", "v1"}, {"kind", "Nope"}, {"metadata", {{"name", "x"}}}});
    ADD_FAILURE() << "an unknown kind was created";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_code(), 404);
  }
}

}  // namespace
}  // namespace autodist::k8s
