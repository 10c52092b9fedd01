// CRD registration, discovery, schema handling, printer columns, the status subresource and
// metadata.generation.
#include <gtest/gtest.h>

#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::Call;
using testing::Job;
using testing::RegisterCrd;

const char* const kJobs = "/apis/autodist.io/v1alpha1/namespaces/default/autodistjobs";
const char* const kTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

TEST(CustomResources, RegisteringACrdServesItAndDiscoveryShowsIt) {
  ApiServer api;
  EXPECT_EQ(Call(api, "GET", kJobs).status, 404);
  RegisterCrd(api);
  const auto crd =
      Call(api, "GET",
           "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/autodistjobs.autodist.io");
  EXPECT_EQ(crd.body["status"]["conditions"][1]["type"], "Established");
  EXPECT_EQ(crd.body["status"]["acceptedNames"]["shortNames"][0], "adj");

  const auto list = Call(api, "GET", "/apis/autodist.io/v1alpha1");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.body["resources"][0]["name"], "autodistjobs");
  EXPECT_EQ(list.body["resources"][0]["shortNames"][0], "adj");
  EXPECT_EQ(list.body["resources"][0]["categories"][0], "all");
  EXPECT_EQ(list.body["resources"][1]["name"], "autodistjobs/status");
  const auto groups = Call(api, "GET", "/apis");
  bool found = false;
  for (const auto& g : groups.body["groups"]) found = found || g["name"] == "autodist.io";
  EXPECT_TRUE(found);

  const auto aggregated =
      Call(api, "GET", "/apis", nullptr, "application/json",
           "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json");
  EXPECT_EQ(aggregated.body["kind"], "APIGroupDiscoveryList");
  const auto openapi = Call(api, "GET", "/openapi/v3");
  EXPECT_TRUE(openapi.body["paths"].contains("apis/autodist.io/v1alpha1"));
  const auto gv = Call(api, "GET", "/openapi/v3/apis/autodist.io/v1alpha1");
  EXPECT_TRUE(gv.body["components"]["schemas"].contains("io.autodist.v1alpha1.AutoDistJob"));

  // Deleting the CRD deletes its objects and unserves it.
  ASSERT_EQ(Call(api, "POST", kJobs, Job("a")).status, 201);
  Call(api, "DELETE",
       "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/autodistjobs.autodist.io");
  EXPECT_EQ(Call(api, "GET", kJobs).status, 404);
  RegisterCrd(api);
  EXPECT_EQ(Call(api, "GET", kJobs).body["items"].size(), 0u);
}

TEST(CustomResources, InvalidCrdIsRejected) {
  ApiServer api;
  nlohmann::json crd = testing::FixtureCrd();
  crd["metadata"]["name"] = "wrong.autodist.io";
  const auto r = Call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.body["reason"], "Invalid");
}

TEST(CustomResources, SchemaDefaultsPrunesAndValidates) {
  ApiServer api;
  RegisterCrd(api);
  nlohmann::json job = Job("a");
  job["spec"]["resources"].erase("workers");
  job["spec"]["unknownField"] = 1;
  const auto created = Call(api, "POST", kJobs, job);
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.body["spec"]["resources"]["workers"], 1);           // the schema default
  EXPECT_FALSE(created.body["spec"].contains("unknownField"));          // pruned
  EXPECT_EQ(created.body["spec"]["model"]["path"], "fmnist_mlp.onnx");  // preserved
  // The default fieldValidation (Warn) says what it pruned.
  ASSERT_EQ(created.headers.size(), 1u);
  EXPECT_NE(created.headers[0].second.find("unknown field \\\"spec.unknownField\\\""),
            std::string::npos);

  const auto strict = Call(api, "POST", std::string(kJobs) + "?fieldValidation=Strict", [] {
    auto j = Job("b");
    j["spec"]["bogus"] = true;
    return j;
  }());
  EXPECT_EQ(strict.status, 400);
  EXPECT_NE(strict.body["message"].get<std::string>().find("unknown field \"spec.bogus\""),
            std::string::npos);

  nlohmann::json bad = Job("c");
  bad["spec"]["resources"]["workers"] = 0;
  bad["spec"]["strategy"]["builder"] = "Magic";
  bad["spec"].erase("training");
  const auto invalid = Call(api, "POST", kJobs, bad);
  EXPECT_EQ(invalid.status, 422);
  EXPECT_EQ(invalid.body["reason"], "Invalid");
  EXPECT_EQ(invalid.body["details"]["causes"].size(), 3u) << invalid.raw;
  EXPECT_NE(invalid.body["message"].get<std::string>().find(
                "spec.resources.workers in body should be greater than or equal to 1"),
            std::string::npos);

  nlohmann::json wrong_type = Job("d");
  wrong_type["spec"]["resources"]["workers"] = "two";
  EXPECT_EQ(Call(api, "POST", kJobs, wrong_type).status, 422);
}

TEST(CustomResources, StatusSubresourceIsolatesStatusFromSpec) {
  ApiServer api;
  RegisterCrd(api);
  nlohmann::json job = Job("a");
  job["status"] = {{"state", "Ignored"}};
  const auto created = Call(api, "POST", kJobs, job);
  EXPECT_FALSE(created.body.contains("status"));  // dropped on create
  EXPECT_EQ(created.body["metadata"]["generation"], 1);

  // The main endpoint ignores status changes ...
  nlohmann::json update = created.body;
  update["status"] = {{"state", "Sneaky"}};
  const auto same = Call(api, "PUT", std::string(kJobs) + "/a", update);
  EXPECT_FALSE(same.body.contains("status"));
  EXPECT_EQ(same.body["metadata"]["resourceVersion"], created.body["metadata"]["resourceVersion"]);

  // ... and /status ignores everything but status, bumping resourceVersion, not generation.
  nlohmann::json status_update = created.body;
  status_update["status"] = {{"state", "Running"}, {"progress", {{"step", 3}}}};
  status_update["spec"]["resources"]["workers"] = 9;
  const auto with_status = Call(api, "PUT", std::string(kJobs) + "/a/status", status_update);
  ASSERT_EQ(with_status.status, 200) << with_status.raw;
  EXPECT_EQ(with_status.body["status"]["state"], "Running");
  EXPECT_EQ(with_status.body["spec"]["resources"]["workers"], 2);
  EXPECT_EQ(with_status.body["metadata"]["generation"], 1);
  EXPECT_NE(with_status.body["metadata"]["resourceVersion"],
            created.body["metadata"]["resourceVersion"]);

  // A stale status write conflicts like any other.
  EXPECT_EQ(Call(api, "PUT", std::string(kJobs) + "/a/status", status_update).status, 409);
  const auto patched = Call(api, "PATCH", std::string(kJobs) + "/a/status",
                            {{"status", {{"state", "Succeeded"}}}, {"spec", {{"model", nullptr}}}},
                            "application/merge-patch+json");
  EXPECT_EQ(patched.body["status"]["state"], "Succeeded");
  EXPECT_EQ(patched.body["status"]["progress"]["step"], 3);
  EXPECT_TRUE(patched.body["spec"].contains("model"));
  // The status schema applies too.
  EXPECT_EQ(Call(api, "PATCH", std::string(kJobs) + "/a/status",
                 {{"status", {{"progress", {{"step", -1}}}}}}, "application/merge-patch+json")
                .status,
            422);
}

TEST(CustomResources, GenerationCountsSpecChangesOnly) {
  ApiServer api;
  RegisterCrd(api);
  const std::string path = std::string(kJobs) + "/a";
  Call(api, "POST", kJobs, Job("a"));
  auto labels = Call(api, "PATCH", path, {{"metadata", {{"labels", {{"x", "y"}}}}}},
                     "application/merge-patch+json");
  EXPECT_EQ(labels.body["metadata"]["generation"], 1);
  auto spec = Call(api, "PATCH", path, {{"spec", {{"resources", {{"workers", 4}}}}}},
                   "application/merge-patch+json");
  EXPECT_EQ(spec.body["metadata"]["generation"], 2);
  auto again = Call(api, "PATCH", path, {{"spec", {{"resources", {{"workers", 4}}}}}},
                    "application/merge-patch+json");
  EXPECT_EQ(again.body["metadata"]["generation"], 2);
  EXPECT_EQ(again.body["metadata"]["resourceVersion"], spec.body["metadata"]["resourceVersion"]);
  // Strategic merge patch is for built-in kinds only, as on a real server.
  EXPECT_EQ(Call(api, "PATCH", path, "{}", "application/strategic-merge-patch+json").status, 415);
}

TEST(CustomResources, PodStatusSubresource) {
  ApiServer api;
  const std::string pods = "/api/v1/namespaces/default/pods";
  Call(api, "POST", pods,
       {{"metadata", {{"name", "p"}}},
        {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}});
  auto running = Call(api, "PATCH", pods + "/p/status", {{"status", {{"phase", "Running"}}}},
                      "application/merge-patch+json");
  EXPECT_EQ(running.body["status"]["phase"], "Running");
  auto main = Call(api, "PATCH", pods + "/p", {{"status", {{"phase", "Failed"}}}},
                   "application/strategic-merge-patch+json");
  EXPECT_EQ(main.body["status"]["phase"], "Running");
}

TEST(CustomResources, TableUsesThePrinterColumns) {
  ApiServer api;
  RegisterCrd(api);
  Call(api, "POST", kJobs, Job("a"));
  Call(api, "PATCH", std::string(kJobs) + "/a/status",
       {{"status",
         {{"state", "Running"},
          {"strategy", {{"builder", "PSLoadBalancing"}, {"workers", 2}, {"parameterServers", 1}}},
          {"progress", {{"step", 7}}}}}},
       "application/merge-patch+json");
  const auto table = Call(api, "GET", kJobs, nullptr, "application/json", kTable);
  ASSERT_EQ(table.body["kind"], "Table") << table.raw;
  std::vector<std::string> columns;
  for (const auto& c : table.body["columnDefinitions"]) columns.push_back(c["name"]);
  EXPECT_EQ(columns,
            (std::vector<std::string>{"Name", "State", "Builder", "Workers", "PS", "Step", "Age"}));
  const auto& cells = table.body["rows"][0]["cells"];
  EXPECT_EQ(cells, (nlohmann::json{"a", "Running", "PSLoadBalancing", 2, 1, 7, cells[6]}));
  EXPECT_TRUE(cells[6].get<std::string>().ends_with("s"));  // "0s": a human duration

  Call(api, "POST", kJobs, Job("b"));
  const auto empty =
      Call(api, "GET", std::string(kJobs) + "/b", nullptr, "application/json", kTable);
  EXPECT_TRUE(empty.body["rows"][0]["cells"][1].is_null());  // kubectl prints <none>
}

}  // namespace
}  // namespace autodist::k8s
