// How the node agent turns a pod into a process: container choice, $(VAR) expansion, the
// downward API, image entrypoints and the errors for what it cannot run.
#include "tests/k8s/launch_spec.h"

#include <gtest/gtest.h>

#include "runtime/common/error.h"

namespace autodist::k8s {
namespace {

nlohmann::json PodWith(const nlohmann::json& containers) {
  return {{"metadata",
           {{"name", "w-0"},
            {"namespace", "jobs"},
            {"uid", "u-1"},
            {"labels", {{"role", "worker"}}},
            {"annotations", {{"rank", "0"}}}}},
          {"spec", {{"containers", containers}}}};
}

std::string ErrorOf(const nlohmann::json& pod, const LaunchContext& context = {}) {
  try {
    MakeLaunchSpec(pod, context);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(LaunchSpec, ExpandVarsFollowsKubernetesRules) {
  const std::map<std::string, std::string> vars = {{"A", "1"}, {"B", "two"}};
  EXPECT_EQ(ExpandVars("$(A)-$(B)", vars), "1-two");
  EXPECT_EQ(ExpandVars("$$(A)", vars), "$(A)");           // escaped
  EXPECT_EQ(ExpandVars("$(C) $(A", vars), "$(C) $(A");    // unknown, unterminated: as written
  EXPECT_EQ(ExpandVars("cost $5 $", vars), "cost $5 $");  // a lone $ is just a $
  EXPECT_EQ(ExpandVars("$$$(A)", vars), "$1");
}

TEST(LaunchSpec, PicksTheRuntimeContainerElseTheFirst) {
  const auto one = PodWith({{{"name", "a"}, {"command", {"x"}}}});
  EXPECT_EQ(SelectContainer(one)["name"], "a");
  const auto two = PodWith(
      {{{"name", "a"}, {"command", {"x"}}}, {{"name", "autodist-runtime"}, {"command", {"y"}}}});
  EXPECT_EQ(MakeLaunchSpec(two, {}).container, "autodist-runtime");
  EXPECT_NE(ErrorOf(PodWith(nlohmann::json::array())).find("spec.containers"), std::string::npos);
}

TEST(LaunchSpec, CommandArgsEnvAndWorkingDir) {
  const auto pod =
      PodWith({{{"name", "c"},
                {"command", {"/bin/run", "--role=$(ROLE)"}},
                {"args", {"--rank", "$(RANK)"}},
                {"workingDir", "/tmp"},
                {"env",
                 {{{"name", "ROLE"},
                   {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['role']"}}}}}},
                  {{"name", "RANK"},
                   {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.annotations['rank']"}}}}}},
                  {{"name", "ROLE"}, {"value", "again-$(ROLE)"}}}}}});
  LaunchContext context;
  context.extra_env = {{"KUBERNETES_SERVICE_PORT", "1234"}};
  const LaunchSpec spec = MakeLaunchSpec(pod, context);
  EXPECT_EQ(spec.argv,
            (std::vector<std::string>{"/bin/run", "--role=again-worker", "--rank", "0"}));
  EXPECT_EQ(spec.working_dir, "/tmp");
  // A redefined name keeps its last value, once.
  EXPECT_EQ(spec.env,
            (std::vector<std::pair<std::string, std::string>>{
                {"KUBERNETES_SERVICE_PORT", "1234"}, {"RANK", "0"}, {"ROLE", "again-worker"}}));
}

TEST(LaunchSpec, DownwardApiFields) {
  const auto pod = PodWith({{{"name", "c"}}});
  LaunchContext context;
  EXPECT_EQ(FieldRefValue(pod, "metadata.name", context), "w-0");
  EXPECT_EQ(FieldRefValue(pod, "metadata.namespace", context), "jobs");
  EXPECT_EQ(FieldRefValue(pod, "metadata.uid", context), "u-1");
  EXPECT_EQ(FieldRefValue(pod, "status.podIP", context), "127.0.0.1");
  EXPECT_EQ(FieldRefValue(pod, "spec.nodeName", context), "fake-node");
  EXPECT_EQ(FieldRefValue(pod, "metadata.labels['missing']", context), "");
  EXPECT_THROW(FieldRefValue(pod, "status.phase", context), Error);
}

TEST(LaunchSpec, ImageEntrypointsAndWhatCannotRun) {
  LaunchContext context;
  context.image_entrypoints["reg.local:5000/team/runtime"] = {"/opt/runtime", "--serve"};
  const auto pod = PodWith(
      {{{"name", "c"}, {"image", "reg.local:5000/team/runtime:v2@sha256:abc"}, {"args", {"x"}}}});
  EXPECT_EQ(MakeLaunchSpec(pod, context).argv,
            (std::vector<std::string>{"/opt/runtime", "--serve", "x"}));

  const auto no_command = PodWith({{{"name", "c"}, {"image", "other:1"}}});
  EXPECT_NE(ErrorOf(no_command).find("--image-entrypoint other=PATH"), std::string::npos);
  const auto resource_field = PodWith(
      {{{"name", "c"},
        {"command", {"x"}},
        {"env", {{{"name", "E"}, {"valueFrom", {{"resourceFieldRef", {{"resource", "cpu"}}}}}}}}}});
  EXPECT_NE(ErrorOf(resource_field).find("env 'E': valueFrom: the node agent serves fieldRef, "),
            std::string::npos);
}

// A context whose store holds `objects` ("configmaps/name" or "secrets/name" -> object).
LaunchContext WithObjects(std::map<std::string, nlohmann::json> objects) {
  LaunchContext context;
  context.lookup = [objects = std::move(objects)](const std::string& resource,
                                                  const std::string& ns, const std::string& name) {
    EXPECT_EQ(ns, "jobs");
    auto it = objects.find(resource + "/" + name);
    return it == objects.end() ? nlohmann::json() : it->second;
  };
  return context;
}

nlohmann::json KeyRef(const char* kind, const char* name, const char* key, bool optional = false) {
  return {{kind, {{"name", name}, {"key", key}, {"optional", optional}}}};
}

TEST(LaunchSpec, EnvFromConfigMapsAndSecrets) {
  const LaunchContext context =
      WithObjects({{"configmaps/cfg", {{"data", {{"a", "1"}, {"b-c", "2"}, {"9x", "no"}}}}},
                   {"secrets/sec", {{"data", {{"token", "czNjcmV0"}}}}}});  // "s3cret"
  auto pod =
      PodWith({{{"name", "c"},
                {"command", {"x", "$(A)"}},
                {"envFrom",
                 {{{"configMapRef", {{"name", "cfg"}}}},
                  {{"prefix", "S_"}, {"secretRef", {{"name", "sec"}}}},
                  {{"configMapRef", {{"name", "gone"}, {"optional", true}}}}}},
                {"env",
                 {{{"name", "A"}, {"valueFrom", KeyRef("configMapKeyRef", "cfg", "a")}},
                  {{"name", "T"}, {"valueFrom", KeyRef("secretKeyRef", "sec", "token")}},
                  {{"name", "O"}, {"valueFrom", KeyRef("configMapKeyRef", "x", "a", true)}},
                  {{"name", "K"}, {"valueFrom", KeyRef("secretKeyRef", "sec", "nope", true)}}}}}});
  const LaunchSpec spec = MakeLaunchSpec(pod, context);
  // envFrom first (keys that are not variable names skipped), then env; optional and missing
  // leaves the variable unset; values from references are not $(VAR)-expanded but usable.
  EXPECT_EQ(spec.env,
            (std::vector<std::pair<std::string, std::string>>{
                {"a", "1"}, {"b-c", "2"}, {"S_token", "s3cret"}, {"A", "1"}, {"T", "s3cret"}}));
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"x", "1"}));

  pod["spec"]["containers"][0]["env"] = {
      {{"name", "M"}, {"valueFrom", KeyRef("configMapKeyRef", "missing", "a")}}};
  EXPECT_NE(ErrorOf(pod, context).find("env 'M': configmap \"missing\" not found"),
            std::string::npos);
  pod["spec"]["containers"][0]["env"] = {
      {{"name", "M"}, {"valueFrom", KeyRef("secretKeyRef", "sec", "nope")}}};
  EXPECT_NE(ErrorOf(pod, context).find("couldn't find key nope in Secret jobs/sec"),
            std::string::npos);
  pod["spec"]["containers"][0].erase("env");
  pod["spec"]["containers"][0]["envFrom"] = {{{"secretRef", {{"name", "nothing"}}}}};
  EXPECT_NE(ErrorOf(pod, context).find("envFrom: secret \"nothing\" not found"), std::string::npos);
}

nlohmann::json MountingPod(const nlohmann::json& volume, const std::string& mount_path,
                           const std::string& sub_path = "") {
  nlohmann::json mount = {{"name", volume["name"]}, {"mountPath", mount_path}};
  if (!sub_path.empty()) mount["subPath"] = sub_path;
  auto pod = PodWith({{{"name", "c"}, {"command", {"x"}}, {"volumeMounts", {mount}}}});
  pod["spec"]["volumes"] = {volume};
  return pod;
}

TEST(LaunchSpec, VolumesAreMountedUnderTheHostRootOnly) {
  LaunchContext context = WithObjects(
      {{"configmaps/cfg", {{"data", {{"job.yaml", "hello"}}}, {"binaryData", {{"b", "AAE="}}}}},
       {"secrets/sec", {{"data", {{"k", "dg=="}}}}}});
  const nlohmann::json config = {{"name", "v"}, {"configMap", {{"name", "cfg"}}}};

  EXPECT_NE(ErrorOf(MountingPod(config, "/r/jobs/w"), context)
                .find("volumeMount 'v' at '/r/jobs/w': the node agent has no host volume root"),
            std::string::npos);
  context.host_volume_root = "/r";
  const std::string outside = ErrorOf(MountingPod(config, "/r/../etc/x"), context);
  EXPECT_NE(outside.find("at '/r/../etc/x': the mountPath is outside the node agent's host volume "
                         "root '/r'"),
            std::string::npos)
      << outside;
  EXPECT_NE(ErrorOf(MountingPod(config, "/r"), context).find("outside"), std::string::npos);
  EXPECT_NE(ErrorOf(MountingPod({{"name", "v"}, {"hostPath", {{"path", "/x"}}}}, "/r/x"), context)
                .find("volume 'v' is of type 'hostPath'"),
            std::string::npos);

  const auto mounts = MakeLaunchSpec(MountingPod(config, "/r/jobs/w/"), context).mounts;
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].mount_path, "/r/jobs/w");
  EXPECT_EQ(mounts[0].type, "configMap");
  ASSERT_EQ(mounts[0].files.size(), 2u);
  EXPECT_EQ(mounts[0].files[0].path, "b");
  EXPECT_EQ(mounts[0].files[0].content, std::string("\0\x01", 2));
  EXPECT_EQ(mounts[0].files[0].mode, 0644);
  EXPECT_EQ(mounts[0].files[1].path, "job.yaml");

  // A subPath mounts one file of the volume; secrets are decoded.
  const auto one = MakeLaunchSpec(
      MountingPod({{"name", "s"}, {"secret", {{"secretName", "sec"}, {"defaultMode", 0400}}}},
                  "/r/jobs/k.txt", "k"),
      context);
  ASSERT_EQ(one.mounts.size(), 1u);
  EXPECT_TRUE(one.mounts[0].single_file);
  EXPECT_EQ(one.mounts[0].files[0].content, "v");
  EXPECT_EQ(one.mounts[0].files[0].mode, 0400);

  const auto missing = MountingPod({{"name", "v"}, {"configMap", {{"name", "nope"}}}}, "/r/a");
  EXPECT_NE(ErrorOf(missing, context).find("configmap \"nope\" not found"), std::string::npos);
  const auto optional =
      MountingPod({{"name", "v"}, {"configMap", {{"name", "nope"}, {"optional", true}}}}, "/r/a");
  EXPECT_TRUE(MakeLaunchSpec(optional, context).mounts[0].files.empty());
  const auto bad_item = MountingPod(
      {{"name", "v"},
       {"configMap", {{"name", "cfg"}, {"items", {{{"key", "job.yaml"}, {"path", "../x"}}}}}}},
      "/r/a");
  EXPECT_NE(ErrorOf(bad_item, context).find("must not contain '..'"), std::string::npos);
  const auto no_key =
      MountingPod({{"name", "v"},
                   {"configMap", {{"name", "cfg"}, {"items", {{{"key", "nope"}, {"path", "x"}}}}}}},
                  "/r/a");
  EXPECT_NE(ErrorOf(no_key, context).find("references non-existent config key: nope"),
            std::string::npos);
}

TEST(LaunchSpec, PathIsUnder) {
  EXPECT_TRUE(PathIsUnder("/r/a", "/r"));
  EXPECT_TRUE(PathIsUnder("/r/a/b/", "/r/"));
  EXPECT_FALSE(PathIsUnder("/r", "/r"));
  EXPECT_FALSE(PathIsUnder("/rx/a", "/r"));
  EXPECT_FALSE(PathIsUnder("/r/a/../../etc", "/r"));
  EXPECT_FALSE(PathIsUnder("r/a", "r"));
}

}  // namespace
}  // namespace autodist::k8s
