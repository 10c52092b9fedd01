// The building blocks: selectors, JSONPath, strategic merge patch, schema handling, durations.
#include <gtest/gtest.h>

#include "tests/k8s/api_error.h"
#include "tests/k8s/base64.h"
#include "tests/k8s/clock.h"
#include "tests/k8s/discovery.h"
#include "tests/k8s/jsonpath.h"
#include "tests/k8s/patch.h"
#include "tests/k8s/schema.h"
#include "tests/k8s/selectors.h"

namespace autodist::k8s {
namespace {

TEST(LabelSelector, Operators) {
  const nlohmann::json labels = {{"app", "fmnist"}, {"role", "worker"}, {"rank", "3"}};
  const auto matches = [&](const std::string& s) {
    return LabelSelector::Parse(s).Matches(labels);
  };
  EXPECT_TRUE(matches(""));
  EXPECT_TRUE(matches("app=fmnist"));
  EXPECT_TRUE(matches("app==fmnist,role=worker"));
  EXPECT_FALSE(matches("app=other"));
  EXPECT_TRUE(matches("role!=ps"));
  EXPECT_TRUE(matches("missing!=x"));  // != matches objects without the label
  EXPECT_TRUE(matches("role in (ps, worker)"));
  EXPECT_FALSE(matches("role notin (worker)"));
  EXPECT_TRUE(matches("app"));
  EXPECT_TRUE(matches("!missing"));
  EXPECT_FALSE(matches("!app"));
  EXPECT_TRUE(matches("rank>2,rank<4"));
  EXPECT_FALSE(matches("rank>3"));
  EXPECT_FALSE(LabelSelector::Parse("app").Matches(nullptr));
  for (const char* bad : {"role in worker", "a=b,", "(x)", "rank>x"}) {
    EXPECT_THROW(LabelSelector::Parse(bad), ApiError) << bad;
  }
}

TEST(FieldSelector, SupportedFieldsOnly) {
  ResourceInfo pods;
  pods.plural = "pods";
  const nlohmann::json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
                              {"spec", {{"nodeName", "n1"}}},
                              {"status", {{"phase", "Running"}}}};
  EXPECT_TRUE(FieldSelector::Parse("metadata.name=p,status.phase!=Failed", pods).Matches(pod));
  EXPECT_TRUE(FieldSelector::Parse("spec.nodeName==n1", pods).Matches(pod));
  EXPECT_FALSE(FieldSelector::Parse("metadata.namespace=other", pods).Matches(pod));
  EXPECT_EQ(FieldSelector::Parse("metadata.name=p", pods).PinnedName(), "p");
  ResourceInfo configmaps;
  configmaps.plural = "configmaps";
  EXPECT_THROW(FieldSelector::Parse("status.phase=Running", configmaps), ApiError);
  ResourceInfo custom;
  custom.is_custom = true;
  custom.selectable_fields = {"spec.color"};
  EXPECT_TRUE(
      FieldSelector::Parse("spec.color=red", custom).Matches({{"spec", {{"color", "red"}}}}));
}

TEST(JsonPath, PrinterColumnPaths) {
  const nlohmann::json obj = {{"metadata", {{"labels", {{"app.kubernetes.io/name", "x"}}}}},
                              {"status",
                               {{"state", "Running"},
                                {"conditions",
                                 {{{"type", "Ready"}, {"status", "False"}},
                                  {{"type", "Succeeded"}, {"status", "True"}}}}}}};
  const auto one = [&](const std::string& path) {
    const auto r = EvaluateJsonPath(obj, path);
    return r.size() == 1 ? *r[0] : nlohmann::json("<" + std::to_string(r.size()) + ">");
  };
  EXPECT_EQ(one(".status.state"), "Running");
  EXPECT_EQ(one("{.status.state}"), "Running");
  EXPECT_EQ(one(".status.conditions[1].type"), "Succeeded");
  EXPECT_EQ(one(".status.conditions[-1].type"), "Succeeded");
  EXPECT_EQ(one(".status.conditions[?(@.type==\"Succeeded\")].status"), "True");
  EXPECT_EQ(one(".metadata.labels['app.kubernetes.io/name']"), "x");
  EXPECT_EQ(one(".metadata.labels.app\\.kubernetes\\.io/name"), "x");
  EXPECT_EQ(EvaluateJsonPath(obj, ".status.conditions[*].type").size(), 2u);
  EXPECT_TRUE(EvaluateJsonPath(obj, ".status.missing").empty());
  EXPECT_THROW(EvaluateJsonPath(obj, ".a[x]"), ApiError);
}

TEST(StrategicMergePatch, MergesListsByKeyAndHonoursDirectives) {
  const nlohmann::json pod = {
      {"metadata", {{"finalizers", {"a"}}, {"labels", {{"x", "1"}, {"y", "2"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "main"}, {"image", "v1"}, {"env", {{{"name", "A"}, {"value", "1"}}}}},
          {{"name", "side"}, {"image", "s1"}}}}}}};
  const nlohmann::json patch = {
      {"metadata", {{"finalizers", {"b"}}, {"labels", {{"y", nullptr}}}}},
      {"spec",
       {{"$setElementOrder/containers", {{{"name", "main"}}, {{"name", "side"}}}},
        {"containers",
         {{{"name", "main"}, {"image", "v2"}, {"env", {{{"name", "B"}, {"value", "2"}}}}},
          {{"name", "side"}, {"$patch", "delete"}}}}}}};
  const nlohmann::json out = ApplyStrategicMergePatch(pod, patch);
  EXPECT_EQ(out["metadata"]["finalizers"], (nlohmann::json{"a", "b"}));
  EXPECT_EQ(out["metadata"]["labels"], (nlohmann::json{{"x", "1"}}));
  ASSERT_EQ(out["spec"]["containers"].size(), 1u);
  EXPECT_EQ(out["spec"]["containers"][0]["image"], "v2");
  EXPECT_EQ(out["spec"]["containers"][0]["env"].size(), 2u);

  const nlohmann::json replaced = ApplyStrategicMergePatch(
      pod, {{"spec", {{"$patch", "replace"}, {"containers", nlohmann::json::array()}}}});
  EXPECT_TRUE(replaced["spec"]["containers"].empty());
  const nlohmann::json trimmed = ApplyStrategicMergePatch(
      pod, {{"metadata", {{"$deleteFromPrimitiveList/finalizers", {"a"}}}}});
  EXPECT_TRUE(trimmed["metadata"]["finalizers"].empty());
}

TEST(Schema, IntOrStringNullableAndMaps) {
  const nlohmann::json schema = {
      {"type", "object"},
      {"properties",
       {{"spec",
         {{"type", "object"},
          {"properties",
           {{"cpu", {{"x-kubernetes-int-or-string", true}}},
            {"note", {{"type", "string"}, {"nullable", true}}},
            {"gone", {{"type", "string"}}},
            {"bytes", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
            {"name", {{"type", "string"}, {"pattern", "^[a-z]+$"}, {"maxLength", 5}}}}}}}}}};
  nlohmann::json ok = {{"spec",
                        {{"cpu", "500m"},
                         {"note", nullptr},
                         {"gone", nullptr},
                         {"bytes", {{"ps0", 10}}},
                         {"name", "abc"}}}};
  const auto report = ApplySchema(schema, ok);
  EXPECT_TRUE(report.causes.empty());
  EXPECT_TRUE(ok["spec"]["note"].is_null());
  EXPECT_FALSE(ok["spec"].contains("gone"));  // null in a non-nullable field is dropped
  nlohmann::json bad = {{"spec", {{"cpu", 1.5}, {"bytes", {{"ps0", "x"}}}, {"name", "ABCDEFG"}}}};
  EXPECT_EQ(ApplySchema(schema, bad).causes.size(), 4u);
}

TEST(Clock, HumanDurationMatchesKubectl) {
  using std::chrono::seconds;
  EXPECT_EQ(HumanDuration(seconds(0)), "0s");
  EXPECT_EQ(HumanDuration(seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(seconds(125)), "2m5s");
  EXPECT_EQ(HumanDuration(seconds(600)), "10m");
  EXPECT_EQ(HumanDuration(seconds(3 * 3600 + 120)), "3h2m");
  EXPECT_EQ(HumanDuration(seconds(30 * 3600)), "30h");
  EXPECT_EQ(HumanDuration(seconds(3 * 86400 + 3600)), "3d1h");
  EXPECT_EQ(ParseRfc3339("2024-05-01T12:00:00Z").has_value(), true);
  EXPECT_EQ(FormatRfc3339(*ParseRfc3339("2024-05-01T12:00:00Z")), "2024-05-01T12:00:00Z");
}

TEST(Misc, Base64AndVersionPriority) {
  for (const std::string s : {"", "a", "ab", "abc", "{\"rv\":12,\"start\":\"ns/x\"}"}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)), s);
  }
  EXPECT_EQ(Base64Encode("ab"), "YWI=");
  EXPECT_TRUE(VersionPriorityLess("v1alpha1", "v1beta1"));
  EXPECT_TRUE(VersionPriorityLess("v1beta2", "v1"));
  EXPECT_TRUE(VersionPriorityLess("v1", "v2"));
  EXPECT_TRUE(VersionPriorityLess("foo", "v1alpha1"));
}

}  // namespace
}  // namespace autodist::k8s
