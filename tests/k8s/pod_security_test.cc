// Pod Security Admission in the double: a namespace's enforce label decides, pods that break the
// level are refused 403 with the plugin's message listing every violation, pods that meet it
// (and any pod in an unlabelled namespace) are created.
#include <gtest/gtest.h>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;

nlohmann::json Namespace(const std::string& name, const std::string& level) {
  return {
      {"apiVersion", "v1"},
      {"kind", "Namespace"},
      {"metadata", {{"name", name}, {"labels", {{"pod-security.kubernetes.io/enforce", level}}}}}};
}

nlohmann::json Pod(const std::string& name, nlohmann::json container_security = nullptr,
                   nlohmann::json pod_security = nullptr) {
  nlohmann::json container = {{"name", "c"}, {"image", "i:1"}};
  if (!container_security.is_null()) container["securityContext"] = container_security;
  nlohmann::json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"name", name}}},
                        {"spec", {{"containers", {container}}}}};
  if (!pod_security.is_null()) pod["spec"]["securityContext"] = pod_security;
  return pod;
}

TEST(PodSecurityTest, RestrictedRefusesWhatItForbidsAndAdmitsWhatMeetsIt) {
  ApiServer api;
  ASSERT_EQ(Call(api, "POST", "/api/v1/namespaces", Namespace("team", "restricted")).status, 201);
  const auto refused = Call(api, "POST", "/api/v1/namespaces/team/pods", Pod("plain"));
  EXPECT_EQ(refused.status, 403);
  EXPECT_EQ(refused.body["reason"], "Forbidden");
  EXPECT_EQ(refused.body["message"],
            "pods \"plain\" is forbidden: violates PodSecurity \"restricted:latest\": "
            "allowPrivilegeEscalation != false (container \"c\" must set "
            "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities "
            "(container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot "
            "!= true (pod or container \"c\" must set securityContext.runAsNonRoot=true), "
            "seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type "
            "to \"RuntimeDefault\" or \"Localhost\")");

  const nlohmann::json hardened =
      Pod("hardened", {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}},
          {{"runAsNonRoot", true}, {"seccompProfile", {{"type", "RuntimeDefault"}}}});
  EXPECT_EQ(Call(api, "POST", "/api/v1/namespaces/team/pods", hardened).status, 201);

  nlohmann::json root = hardened;
  root["metadata"]["name"] = "root";
  root["spec"]["securityContext"]["runAsUser"] = 0;
  root["spec"]["volumes"] = {{{"name", "host"}, {"hostPath", {{"path", "/"}}}}};
  const auto root_refused = Call(api, "POST", "/api/v1/namespaces/team/pods", root);
  EXPECT_EQ(root_refused.status, 403);
  const std::string message = root_refused.body["message"];
  EXPECT_NE(message.find("hostPath volumes (volume \"host\")"), std::string::npos) << message;
  EXPECT_NE(message.find("restricted volume types (volume \"host\" uses restricted volume type "
                         "\"hostPath\")"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("runAsUser=0"), std::string::npos) << message;
}

TEST(PodSecurityTest, BaselineAllowsPlainPodsButNotPrivilegeAndUnlabelledAllowsAll) {
  ApiServer api;
  ASSERT_EQ(Call(api, "POST", "/api/v1/namespaces", Namespace("base", "baseline")).status, 201);
  EXPECT_EQ(Call(api, "POST", "/api/v1/namespaces/base/pods", Pod("plain")).status, 201);
  const auto privileged =
      Call(api, "POST", "/api/v1/namespaces/base/pods",
           Pod("privileged", {{"privileged", true}, {"capabilities", {{"add", {"SYS_ADMIN"}}}}}));
  EXPECT_EQ(privileged.status, 403);
  EXPECT_EQ(privileged.body["message"],
            "pods \"privileged\" is forbidden: violates PodSecurity \"baseline:latest\": "
            "privileged (container \"c\" must not set securityContext.privileged=true), "
            "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in "
            "securityContext.capabilities.add)");
  // No label: the privileged level, anything goes.
  EXPECT_EQ(
      Call(api, "POST", "/api/v1/namespaces/default/pods", Pod("anything", {{"privileged", true}}))
          .status,
      201);
}

}  // namespace
}  // namespace autodist::k8s
