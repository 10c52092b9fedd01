// Kubernetes name, label and quantity syntax, against examples from the Kubernetes docs and
// apimachinery's validation rules.
#include "runtime/job/k8s_syntax.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace autodist::job {
namespace {

TEST(K8sSyntaxTest, Dns1035Label) {
  for (const std::string& good :
       std::vector<std::string>{"a", "fmnist-ps", "job-2", std::string(63, 'a')}) {
    EXPECT_TRUE(IsDns1035Label(good)) << good;
  }
  for (const std::string& bad : std::vector<std::string>{
           "", "1job", "-job", "job-", "Job", "my_job", "my.job", "jöb", std::string(64, 'a')}) {
    EXPECT_FALSE(IsDns1035Label(bad)) << bad;
  }
}

TEST(K8sSyntaxTest, Dns1123LabelAllowsLeadingDigits) {
  EXPECT_TRUE(IsDns1123Label("1st-team"));
  EXPECT_TRUE(IsDns1123Label("default"));
  EXPECT_FALSE(IsDns1123Label("kube.system"));
  EXPECT_FALSE(IsDns1123Label("Team"));
  EXPECT_FALSE(IsDns1123Label(""));
}

TEST(K8sSyntaxTest, Dns1123Subdomain) {
  EXPECT_TRUE(IsDns1123Subdomain("fmnist-model"));
  EXPECT_TRUE(IsDns1123Subdomain("models.team-a.v1"));
  EXPECT_FALSE(IsDns1123Subdomain("models..v1"));
  EXPECT_FALSE(IsDns1123Subdomain(".models"));
  EXPECT_FALSE(IsDns1123Subdomain("Models"));
  EXPECT_FALSE(IsDns1123Subdomain(std::string(64, 'a')));  // one label of 64
  std::string long_name;
  for (int i = 0; i < 4; ++i) long_name += std::string(63, 'a') + ".";
  long_name += "a";  // 4 * 64 + 1 = 257 characters
  EXPECT_FALSE(IsDns1123Subdomain(long_name));
}

TEST(K8sSyntaxTest, ConfigMapKey) {
  EXPECT_TRUE(IsConfigMapKey("model.onnx"));
  EXPECT_TRUE(IsConfigMapKey("Model_v2-final.onnx"));
  EXPECT_FALSE(IsConfigMapKey("a/b"));
  EXPECT_FALSE(IsConfigMapKey("."));
  EXPECT_FALSE(IsConfigMapKey(".."));
  EXPECT_FALSE(IsConfigMapKey(""));
}

TEST(K8sSyntaxTest, LabelKeysAndValues) {
  EXPECT_TRUE(IsQualifiedName("app"));
  EXPECT_TRUE(IsQualifiedName("app.kubernetes.io/name"));
  EXPECT_TRUE(IsQualifiedName("Team_1.x"));
  EXPECT_FALSE(IsQualifiedName("/name"));
  EXPECT_FALSE(IsQualifiedName("Example.com/name"));  // the prefix is a lowercase subdomain
  EXPECT_FALSE(IsQualifiedName("a/b/c"));
  EXPECT_FALSE(IsQualifiedName("-app"));
  EXPECT_FALSE(IsQualifiedName(std::string(64, 'a')));
  EXPECT_TRUE(IsLabelValue(""));
  EXPECT_TRUE(IsLabelValue("v1.2_rc-3"));
  EXPECT_FALSE(IsLabelValue("v1 2"));
  EXPECT_FALSE(IsLabelValue("_v"));
  EXPECT_FALSE(IsLabelValue(std::string(64, 'v')));
}

TEST(K8sSyntaxTest, ResourceQuantities) {
  for (const char* good : {"2", "1.5", ".5", "5.", "500m", "128Mi", "4Gi", "1Ti", "2Ei", "1e9",
                           "1E3", "1e-3", "1e+3", "1G", "3k", "0", "+1"}) {
    EXPECT_TRUE(IsResourceQuantity(good)) << good;
  }
  for (const char* bad : {"", "-1", "-500m", "4GB", "4gi", "1K", "2 cores", "1.2.3", ".", "e9",
                          "1e", "1e1.5", "Gi", "1Mi1", "1 Gi"}) {
    EXPECT_FALSE(IsResourceQuantity(bad)) << bad;
  }
}

}  // namespace
}  // namespace autodist::job
