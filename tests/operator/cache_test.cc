// The informer cache's lookups and label selectors.
#include "operator/controller/cache.h"

#include <gtest/gtest.h>

#include "runtime/common/error.h"

namespace autodist::controller {
namespace {

nlohmann::json Pod(const std::string& ns, const std::string& name, const nlohmann::json& labels,
                   const std::string& owner_uid = "") {
  nlohmann::json pod = {{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels}}}};
  if (!owner_uid.empty()) {
    pod["metadata"]["ownerReferences"] = {{{"kind", "AutoDistJob"}, {"uid", owner_uid}}};
  }
  return pod;
}

TEST(LabelSelectorTest, EqualitySetAndExistenceRequirements) {
  const nlohmann::json labels = {{"app", "fmnist"}, {"role", "worker"}, {"autodist.io/job", "j"}};
  const auto matches = [&](const std::string& s) {
    return LabelSelector::Parse(s).Matches(labels);
  };
  EXPECT_TRUE(matches(""));
  EXPECT_TRUE(matches("app=fmnist"));
  EXPECT_TRUE(matches("app==fmnist,role!=ps"));
  EXPECT_FALSE(matches("app=other"));
  EXPECT_TRUE(matches("role in (ps, worker)"));
  EXPECT_FALSE(matches("role notin (ps,worker)"));
  EXPECT_TRUE(matches("autodist.io/job,!missing"));
  EXPECT_FALSE(matches("missing"));
  EXPECT_TRUE(matches("missing!=x"));  // a missing label satisfies !=
  EXPECT_FALSE(LabelSelector::Parse("app=fmnist").Matches(nullptr));
  EXPECT_TRUE(LabelSelector::FromLabels({{"app", "fmnist"}}).Matches(labels));
}

TEST(LabelSelectorTest, BadSelectorsNameTheTerm) {
  try {
    LabelSelector::Parse("app=x,role in ps");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("term 'role in ps'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(LabelSelector::Parse("a,,b"), Error);
  EXPECT_THROW(LabelSelector::Parse("role in (a"), Error);
  EXPECT_THROW(LabelSelector::Parse("role within (a)"), Error);
}

TEST(ObjectCacheTest, ListsByNamespaceSelectorAndOwner) {
  ObjectCache cache;
  EXPECT_EQ(cache.Upsert(Pod("a", "w0", {{"role", "worker"}}, "job1")), nullptr);
  cache.Upsert(Pod("a", "ps0", {{"role", "ps"}}, "job1"));
  cache.Upsert(Pod("ab", "w0", {{"role", "worker"}}, "job2"));  // "ab" sorts right after "a/"
  cache.Upsert(Pod("b", "w0", {{"role", "worker"}}));
  EXPECT_EQ(cache.size(), 4u);
  EXPECT_EQ(cache.List("a").size(), 2u);
  EXPECT_EQ(cache.List("", LabelSelector::Parse("role=worker")).size(), 3u);
  EXPECT_EQ(cache.List("ab", LabelSelector::Parse("role=worker")).size(), 1u);
  EXPECT_EQ(cache.ListByOwner("job1").size(), 2u);

  // Re-owning and removing keep the owner index right.
  const auto previous = cache.Upsert(Pod("a", "ps0", {{"role", "ps"}}, "job2"));
  ASSERT_NE(previous, nullptr);
  EXPECT_EQ(cache.ListByOwner("job1").size(), 1u);
  EXPECT_EQ(cache.ListByOwner("job2").size(), 2u);
  EXPECT_NE(cache.Remove("a/w0"), nullptr);
  EXPECT_EQ(cache.Remove("a/w0"), nullptr);
  EXPECT_TRUE(cache.ListByOwner("job1").empty());
  EXPECT_EQ(cache.Keys(), (std::vector<std::string>{"a/ps0", "ab/w0", "b/w0"}));
}

TEST(ObjectCacheTest, SnapshotsOutliveUpdates) {
  ObjectCache cache;
  cache.Upsert(Pod("a", "w0", {{"v", "1"}}));
  const ObjectPtr before = cache.Get("a", "w0");
  cache.Upsert(Pod("a", "w0", {{"v", "2"}}));
  EXPECT_EQ((*before)["metadata"]["labels"]["v"], "1");
  EXPECT_EQ((*cache.Get("a/w0"))["metadata"]["labels"]["v"], "2");
}

TEST(ObjectKeyTest, RoundTrips) {
  EXPECT_EQ(ObjectKey("ns", "n"), "ns/n");
  EXPECT_EQ(ObjectKey("", "node1"), "node1");
  EXPECT_EQ(SplitKey("ns/n"), (std::pair<std::string, std::string>{"ns", "n"}));
  EXPECT_EQ(SplitKey("node1"), (std::pair<std::string, std::string>{"", "node1"}));
}

}  // namespace
}  // namespace autodist::controller
