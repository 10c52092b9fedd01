// CRUD semantics of the test double, driven in-process through ApiServer::Handle.
#include <gtest/gtest.h>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;

const char* const kPods = "/api/v1/namespaces/default/pods";
const char* const kConfigMaps = "/api/v1/namespaces/default/configmaps";

nlohmann::json ConfigMap(const std::string& name,
                         nlohmann::json labels = nlohmann::json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"data", {{"k", "v"}}}};
}

TEST(Crud, CreateSetsServerFieldsAndGetReturnsTheObject) {
  ApiServer api;
  const auto created = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  ASSERT_EQ(created.status, 201) << created.raw;
  const auto& meta = created.body["metadata"];
  EXPECT_EQ(meta["namespace"], "default");
  EXPECT_EQ(meta["uid"].get<std::string>().size(), 36u);
  EXPECT_FALSE(meta["creationTimestamp"].get<std::string>().empty());
  const auto rv = std::stoull(meta["resourceVersion"].get<std::string>());
  const auto got = Call(api, "GET", std::string(kConfigMaps) + "/a");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, created.body);

  // The counter is global and increases with every write.
  const auto second = Call(api, "POST", kConfigMaps, ConfigMap("b"));
  EXPECT_GT(std::stoull(second.body["metadata"]["resourceVersion"].get<std::string>()), rv);
}

TEST(Crud, ConfigMapsAndSecretsHoldAtMostOneMebibyte) {
  ApiServer api;
  constexpr size_t kLimit = 1024 * 1024;
  nlohmann::json at_limit = ConfigMap("at-limit");
  at_limit["data"] = {{"a", std::string(kLimit - 10, 'x')}, {"b", std::string(10, 'y')}};
  ASSERT_EQ(Call(api, "POST", kConfigMaps, at_limit).status, 201);

  nlohmann::json over = ConfigMap("over");
  over["data"] = {{"a", std::string(kLimit - 10, 'x')}};
  over["binaryData"] = {{"b", "AAAAAAAAAAAAAAAA"}};  // 12 bytes decoded: 2 past the limit
  const auto refused = Call(api, "POST", kConfigMaps, over);
  EXPECT_EQ(refused.status, 422) << refused.raw.substr(0, 300);
  EXPECT_EQ(refused.body["reason"], "Invalid");
  EXPECT_EQ(refused.body["message"],
            "ConfigMap \"over\" is invalid: []: Too long: may not be more than 1048576 bytes");
  EXPECT_EQ(refused.body["details"]["causes"][0]["reason"], "FieldValueTooLong");
  EXPECT_EQ(Call(api, "GET", std::string(kConfigMaps) + "/over").status, 404);

  // An update that grows past the limit is refused too, and leaves the object as it was.
  nlohmann::json grown = Call(api, "GET", std::string(kConfigMaps) + "/at-limit").body;
  grown["data"]["c"] = "z";
  EXPECT_EQ(Call(api, "PUT", std::string(kConfigMaps) + "/at-limit", grown).status, 422);
  EXPECT_FALSE(Call(api, "GET", std::string(kConfigMaps) + "/at-limit").body["data"].contains("c"));

  // Secrets count their values decoded, stringData included.
  const nlohmann::json secret = {{"apiVersion", "v1"},
                                 {"kind", "Secret"},
                                 {"metadata", {{"name", "big"}}},
                                 {"stringData", {{"key", std::string(kLimit + 1, 's')}}}};
  const auto secret_refused = Call(api, "POST", "/api/v1/namespaces/default/secrets", secret);
  EXPECT_EQ(secret_refused.status, 422);
  EXPECT_EQ(secret_refused.body["details"]["causes"][0]["field"], "data");
}

TEST(Crud, ErrorsAreStatusObjectsWithReasonAndCode) {
  ApiServer api;
  const auto missing = Call(api, "GET", std::string(kConfigMaps) + "/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["kind"], "Status");
  EXPECT_EQ(missing.body["status"], "Failure");
  EXPECT_EQ(missing.body["reason"], "NotFound");
  EXPECT_EQ(missing.body["code"], 404);
  EXPECT_EQ(missing.body["message"], "configmaps \"nope\" not found");
  EXPECT_EQ(missing.body["details"]["name"], "nope");

  ASSERT_EQ(Call(api, "POST", kConfigMaps, ConfigMap("a")).status, 201);
  const auto dup = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  EXPECT_EQ(dup.status, 409);
  EXPECT_EQ(dup.body["reason"], "AlreadyExists");

  const auto bad_name = Call(api, "POST", kConfigMaps, ConfigMap("Not_Valid"));
  EXPECT_EQ(bad_name.status, 422);
  EXPECT_EQ(bad_name.body["reason"], "Invalid");
  EXPECT_EQ(bad_name.body["details"]["causes"][0]["field"], "metadata.name");

  const auto no_ns = Call(api, "POST", "/api/v1/namespaces/nowhere/configmaps", ConfigMap("a"));
  EXPECT_EQ(no_ns.status, 404);
  EXPECT_EQ(no_ns.body["message"], "namespaces \"nowhere\" not found");

  EXPECT_EQ(Call(api, "GET", "/api/v1/namespaces/default/widgets").status, 404);
  EXPECT_EQ(Call(api, "POST", kConfigMaps, "{not json").body["reason"], "BadRequest");
  const auto wrong_kind = Call(api, "POST", kPods, ConfigMap("x"));
  EXPECT_EQ(wrong_kind.status, 400);
}

TEST(Crud, GenerateNameAddsARandomSuffix) {
  ApiServer api;
  nlohmann::json cm = ConfigMap("");
  cm["metadata"].erase("name");
  cm["metadata"]["generateName"] = "job-";
  const auto a = Call(api, "POST", kConfigMaps, cm);
  const auto b = Call(api, "POST", kConfigMaps, cm);
  ASSERT_EQ(a.status, 201) << a.raw;
  const std::string name = a.body["metadata"]["name"];
  EXPECT_EQ(name.rfind("job-", 0), 0u);
  EXPECT_EQ(name.size(), 9u);
  EXPECT_NE(name, b.body["metadata"]["name"]);
}

TEST(Crud, StalePutIsAConflictAndUnconditionalPutWins) {
  ApiServer api;
  const auto created = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  nlohmann::json v1 = created.body;
  v1["data"]["k"] = "first";
  const auto updated = Call(api, "PUT", std::string(kConfigMaps) + "/a", v1);
  ASSERT_EQ(updated.status, 200) << updated.raw;
  EXPECT_NE(updated.body["metadata"]["resourceVersion"],
            created.body["metadata"]["resourceVersion"]);

  nlohmann::json stale = created.body;  // still carries the first resourceVersion
  stale["data"]["k"] = "second";
  const auto conflict = Call(api, "PUT", std::string(kConfigMaps) + "/a", stale);
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.body["reason"], "Conflict");
  EXPECT_NE(conflict.body["message"].get<std::string>().find("the object has been modified"),
            std::string::npos);
  EXPECT_EQ(Call(api, "GET", std::string(kConfigMaps) + "/a").body["data"]["k"], "first");

  stale["metadata"].erase("resourceVersion");
  EXPECT_EQ(Call(api, "PUT", std::string(kConfigMaps) + "/a", stale).body["data"]["k"], "second");
  EXPECT_EQ(Call(api, "PUT", std::string(kConfigMaps) + "/missing", ConfigMap("missing")).status,
            404);
}

TEST(Crud, NoOpUpdateKeepsTheResourceVersion) {
  ApiServer api;
  const auto created = Call(api, "POST", kConfigMaps, ConfigMap("a"));
  const auto same = Call(api, "PUT", std::string(kConfigMaps) + "/a", created.body);
  EXPECT_EQ(same.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);
}

TEST(Crud, PatchTypes) {
  ApiServer api;
  const std::string path = std::string(kConfigMaps) + "/a";
  Call(api, "POST", kConfigMaps, ConfigMap("a"));
  auto merged = Call(api, "PATCH", path, {{"data", {{"m", "1"}, {"k", nullptr}}}},
                     "application/merge-patch+json");
  EXPECT_EQ(merged.body["data"], (nlohmann::json{{"m", "1"}}));
  auto json_patch =
      Call(api, "PATCH", path,
           nlohmann::json::array({{{"op", "add"}, {"path", "/data/j"}, {"value", "2"}}}),
           "application/json-patch+json");
  EXPECT_EQ(json_patch.body["data"]["j"], "2");
  auto failed = Call(api, "PATCH", path,
                     nlohmann::json::array({{{"op", "test"}, {"path", "/data/j"}, {"value", "x"}}}),
                     "application/json-patch+json");
  EXPECT_EQ(failed.status, 422);
  auto strategic = Call(api, "PATCH", path, {{"metadata", {{"labels", {{"l", "1"}}}}}},
                        "application/strategic-merge-patch+json");
  EXPECT_EQ(strategic.body["metadata"]["labels"]["l"], "1");
  EXPECT_EQ(Call(api, "PATCH", path, "{}", "text/plain").status, 415);
  // A resourceVersion in a patch is a precondition.
  auto stale = Call(api, "PATCH", path, {{"metadata", {{"resourceVersion", "1"}}}},
                    "application/merge-patch+json");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(
      Call(api, "PATCH", std::string(kConfigMaps) + "/zz", "{}", "application/merge-patch+json")
          .status,
      404);
}

TEST(Crud, ServerSideApplyCreatesThenMerges) {
  ApiServer api;
  const std::string path = std::string(kConfigMaps) + "/applied?fieldManager=test";
  const std::string yaml =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n";
  auto created = Call(api, "PATCH", path, yaml, "application/apply-patch+yaml");
  ASSERT_EQ(created.status, 200) << created.raw;
  auto merged = Call(api, "PATCH", path, "data:\n  b: '2'\n", "application/apply-patch+yaml");
  EXPECT_EQ(merged.body["data"], (nlohmann::json{{"a", "1"}, {"b", "2"}}));
}

TEST(Crud, DryRunStoresNothing) {
  ApiServer api;
  const auto dry = Call(api, "POST", std::string(kConfigMaps) + "?dryRun=All", ConfigMap("a"));
  EXPECT_EQ(dry.status, 201);
  EXPECT_EQ(Call(api, "GET", std::string(kConfigMaps) + "/a").status, 404);
}

TEST(Crud, ListFiltersByLabelsAndFieldsAndPaginates) {
  ApiServer api;
  Call(api, "POST", kConfigMaps, ConfigMap("a", {{"role", "worker"}, {"app", "x"}}));
  Call(api, "POST", kConfigMaps, ConfigMap("b", {{"role", "ps"}, {"app", "x"}}));
  Call(api, "POST", kConfigMaps, ConfigMap("c", {{"role", "worker"}}));
  Call(api, "POST", "/api/v1/namespaces", {{"metadata", {{"name", "other"}}}});
  Call(api, "POST", "/api/v1/namespaces/other/configmaps", ConfigMap("d", {{"role", "worker"}}));
  const auto names = [&](const std::string& query) {
    std::vector<std::string> out;
    const auto reply = Call(api, "GET", query);
    EXPECT_EQ(reply.status, 200) << query << ": " << reply.raw;
    for (const auto& item : reply.body["items"]) {
      out.push_back(item["metadata"]["name"]);
    }
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names(std::string(kConfigMaps) + "?labelSelector=role%3Dworker"), (V{"a", "c"}));
  EXPECT_EQ(names(std::string(kConfigMaps) + "?labelSelector=role+in+(ps,x),app"), (V{"b"}));
  EXPECT_EQ(names(std::string(kConfigMaps) + "?labelSelector=role!%3Dps,!app"), (V{"c"}));
  EXPECT_EQ(names(std::string(kConfigMaps) + "?fieldSelector=metadata.name%3Db"), (V{"b"}));
  EXPECT_EQ(names("/api/v1/configmaps?labelSelector=role%3Dworker"), (V{"a", "c", "d"}));
  EXPECT_EQ(names("/api/v1/configmaps?fieldSelector=metadata.namespace%3Dother"), (V{"d"}));
  EXPECT_EQ(Call(api, "GET", std::string(kConfigMaps) + "?fieldSelector=data.k%3Dv").status, 400);
  EXPECT_EQ(Call(api, "GET", std::string(kConfigMaps) + "?labelSelector=a+in+b").status, 400);

  const auto page1 = Call(api, "GET", std::string(kConfigMaps) + "?limit=2");
  ASSERT_EQ(page1.body["items"].size(), 2u);
  EXPECT_EQ(page1.body["kind"], "ConfigMapList");
  const std::string token = page1.body["metadata"]["continue"];
  const auto page2 = Call(api, "GET", std::string(kConfigMaps) + "?limit=2&continue=" + token);
  ASSERT_EQ(page2.body["items"].size(), 1u);
  EXPECT_EQ(page2.body["items"][0]["metadata"]["name"], "c");
  EXPECT_FALSE(page2.body["metadata"].contains("continue"));
}

TEST(Crud, ClusterScopedResourcesAndNamespaceDeletion) {
  ApiServer api;
  ASSERT_EQ(Call(api, "POST", "/api/v1/namespaces", {{"metadata", {{"name", "team"}}}}).status,
            201);
  ASSERT_EQ(Call(api, "POST", "/api/v1/namespaces/team/configmaps", ConfigMap("a")).status, 201);
  EXPECT_EQ(Call(api, "GET", "/api/v1/namespaces/team").body["status"]["phase"], "Active");
  EXPECT_EQ(Call(api, "DELETE", "/api/v1/namespaces/team").status, 200);
  EXPECT_EQ(Call(api, "GET", "/api/v1/namespaces/team/configmaps/a").status, 404);
  EXPECT_EQ(Call(api, "GET", "/api/v1/namespaces/default").status, 200);
}

TEST(Crud, DeleteCollectionBySelector) {
  ApiServer api;
  Call(api, "POST", kConfigMaps, ConfigMap("a", {{"x", "1"}}));
  Call(api, "POST", kConfigMaps, ConfigMap("b", {{"x", "1"}}));
  Call(api, "POST", kConfigMaps, ConfigMap("c"));
  const auto deleted = Call(api, "DELETE", std::string(kConfigMaps) + "?labelSelector=x");
  EXPECT_EQ(deleted.body["items"].size(), 2u);
  EXPECT_EQ(Call(api, "GET", kConfigMaps).body["items"].size(), 1u);
}

TEST(Crud, PodSpecIsImmutableButImages) {
  ApiServer api;
  Call(api, "POST", kPods,
       {{"metadata", {{"name", "p"}}},
        {"spec", {{"containers", {{{"name", "c"}, {"image", "i:1"}}}}}}});
  const std::string path = std::string(kPods) + "/p";
  const auto image =
      Call(api, "PATCH", path, {{"spec", {{"containers", {{{"name", "c"}, {"image", "i:2"}}}}}}},
           "application/strategic-merge-patch+json");
  EXPECT_EQ(image.status, 200) << image.raw;
  EXPECT_EQ(image.body["spec"]["restartPolicy"], "Always");  // defaulted on create, kept
  const auto env = Call(
      api, "PATCH", path,
      {{"spec", {{"containers", {{{"name", "c"}, {"env", {{{"name", "A"}, {"value", "1"}}}}}}}}}},
      "application/strategic-merge-patch+json");
  EXPECT_EQ(env.status, 422);
  EXPECT_EQ(env.body["details"]["causes"][0]["reason"], "FieldValueForbidden");
  const auto node = Call(api, "PATCH", path, {{"spec", {{"nodeName", "node-1"}}}},
                         "application/merge-patch+json");
  EXPECT_EQ(node.body["spec"]["nodeName"], "node-1");
  EXPECT_EQ(
      Call(api, "PATCH", path, {{"spec", {{"nodeName", "node-2"}}}}, "application/merge-patch+json")
          .status,
      422);
}

TEST(Crud, TableOutputForBuiltins) {
  ApiServer api;
  Call(api, "POST", kPods,
       {{"metadata", {{"name", "p"}}},
        {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}});
  const auto table = Call(api, "GET", kPods, nullptr, "application/json",
                          "application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
  ASSERT_EQ(table.body["kind"], "Table") << table.raw;
  EXPECT_EQ(table.body["columnDefinitions"][2]["name"], "Status");
  EXPECT_EQ(table.body["rows"][0]["cells"][1], "0/1");
  EXPECT_EQ(table.body["rows"][0]["cells"][2], "Pending");
  EXPECT_EQ(table.body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
}

}  // namespace
}  // namespace autodist::k8s
