// Kubeconfig and in-cluster config loading: the fields client-go resolves for one context, and
// errors that name the file and the field.
#include "operator/kube/config.h"

#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "tests/k8s/test_util.h"

namespace autodist::kube {
namespace {

using k8s::testing::TempDir;
using k8s::testing::WriteFile;

// "PEM" stand-ins: loading only reads and decodes them; the client checks them as TLS material.
constexpr const char* kCa = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
constexpr const char* kCaBase64 =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K";

std::string Kubeconfig(const std::string& users = "") {
  return R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev-cluster
  cluster:
    server: https://dev.example.com:6443/
    certificate-authority-data: )" +
         std::string(kCaBase64) + R"(
- name: prod-cluster
  cluster:
    server: https://prod.example.com
    certificate-authority: ca.crt
    insecure-skip-tls-verify: true
contexts:
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
    namespace: team-a
- name: prod
  context:
    cluster: prod-cluster
    user: prod-user
users:
- name: dev-user
  user:
    token: abc123
- name: prod-user
  user:
    tokenFile: token
    client-certificate: certs/client.crt
    client-key-data: S0VZ
)" + users;
}

// Loads `text` as a kubeconfig and returns the error message (fails the test when it loads).
std::string LoadError(const std::string& text, const std::string& context = "") {
  TempDir dir;
  WriteFile(dir.path() + "/config", text);
  try {
    LoadKubeconfig(dir.path() + "/config", context);
  } catch (const Error& e) {
    EXPECT_TRUE(e.IsUserError()) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "loaded";
  return "";
}

TEST(KubeconfigTest, CurrentContextResolvesClusterUserAndNamespace) {
  TempDir dir;
  WriteFile(dir.path() + "/config", Kubeconfig());
  const Config c = LoadKubeconfig(dir.path() + "/config");
  EXPECT_EQ(c.server, "https://dev.example.com:6443");  // trailing slash dropped
  EXPECT_EQ(c.ca_pem, kCa);
  EXPECT_FALSE(c.insecure_skip_tls_verify);
  EXPECT_EQ(c.token, "abc123");
  EXPECT_EQ(c.ns, "team-a");
  EXPECT_NE(c.source.find("context 'dev'"), std::string::npos);
}

TEST(KubeconfigTest, NamedContextWithFilesRelativeToTheKubeconfig) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/certs");
  WriteFile(dir.path() + "/config", Kubeconfig());
  WriteFile(dir.path() + "/ca.crt", "PROD CA");
  WriteFile(dir.path() + "/token", "file-token\n");
  WriteFile(dir.path() + "/certs/client.crt", "CLIENT CERT");
  const Config c = LoadKubeconfig(dir.path() + "/config", "prod");
  EXPECT_EQ(c.server, "https://prod.example.com");
  EXPECT_EQ(c.ca_pem, "PROD CA");
  EXPECT_TRUE(c.insecure_skip_tls_verify);
  EXPECT_EQ(c.token, "");
  EXPECT_EQ(c.token_file, dir.path() + "/token");
  EXPECT_EQ(c.client_cert_pem, "CLIENT CERT");
  EXPECT_EQ(c.client_key_pem, "KEY");
  EXPECT_EQ(c.ns, "default");
}

TEST(KubeconfigTest, MissingFileIsNotFound) {
  try {
    LoadKubeconfig("/nonexistent/kubeconfig");
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kubeconfig"), std::string::npos);
  }
}

TEST(KubeconfigTest, BadFilesNameTheFileAndTheField) {
  EXPECT_NE(LoadError("a: [b").find("not valid YAML"), std::string::npos);
  EXPECT_NE(LoadError("- a\n- b\n").find("expected a YAML map"), std::string::npos);
  EXPECT_NE(LoadError("clusters: []\n").find("current-context: not set"), std::string::npos);
  EXPECT_NE(LoadError(Kubeconfig(), "staging")
                .find("contexts: no entry named 'staging' (entries: dev, prod)"),
            std::string::npos);

  std::string text = Kubeconfig();
  text.replace(text.find("server: https://dev"), 19, "server: dev");
  EXPECT_NE(LoadError(text).find("clusters['dev-cluster'].cluster.server: expected an http:// or "
                                 "https:// URL, got 'dev.example.com:6443/'"),
            std::string::npos);

  text = Kubeconfig();
  text.replace(text.find(kCaBase64), 4, "....");
  EXPECT_NE(LoadError(text).find(
                "clusters['dev-cluster'].cluster.certificate-authority-data: not valid base64"),
            std::string::npos);

  text = Kubeconfig();
  text.replace(text.find("insecure-skip-tls-verify: true"), 30, "insecure-skip-tls-verify: maybe");
  EXPECT_NE(LoadError(text, "prod").find("insecure-skip-tls-verify: expected true or false"),
            std::string::npos);

  // Files the kubeconfig names must exist (the message names the field that names them).
  std::string missing = LoadError(Kubeconfig(), "prod");
  EXPECT_NE(missing.find("clusters['prod-cluster'].cluster.certificate-authority file '"),
            std::string::npos)
      << missing;
  {
    TempDir dir;
    WriteFile(dir.path() + "/config", Kubeconfig());
    WriteFile(dir.path() + "/ca.crt", "PROD CA");
    try {
      LoadKubeconfig(dir.path() + "/config", "prod");
      ADD_FAILURE() << "loaded without the token file";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("users['prod-user'].user.tokenFile file '" + dir.path() +
                                           "/token' does not exist"),
                std::string::npos)
          << e.what();
    }
  }

  const auto exec_error = [](const std::string& exec) {
    std::string with_exec = Kubeconfig();
    with_exec.replace(with_exec.find("    token: abc123"), 17, "    exec: " + exec);
    return LoadError(with_exec);
  };
  EXPECT_NE(exec_error("{apiVersion: client.authentication.k8s.io/v1}")
                .find("users['dev-user'].user.exec.command: required"),
            std::string::npos);
  EXPECT_NE(exec_error("{apiVersion: client.authentication.k8s.io/v1alpha1, command: x}")
                .find("exec.apiVersion: expected client.authentication.k8s.io/v1 or /v1beta1"),
            std::string::npos);
  EXPECT_NE(exec_error("{apiVersion: client.authentication.k8s.io/v1, command: x, "
                       "interactiveMode: Always}")
                .find("exec.interactiveMode: Always needs a terminal"),
            std::string::npos);
  EXPECT_NE(exec_error("{apiVersion: client.authentication.k8s.io/v1, command: x, env: [{value: "
                       "v}]}")
                .find("exec.env[0].name: required"),
            std::string::npos);
  text = Kubeconfig();
  text.replace(text.find("    token: abc123"), 17, "    auth-provider: {name: gcp}");
  EXPECT_NE(LoadError(text).find("users['dev-user'].user.auth-provider: not supported"),
            std::string::npos);

  text = Kubeconfig();
  text.replace(text.find("    user: dev-user"), 18, "    user: nobody");
  EXPECT_NE(LoadError(text).find("users: no entry named 'nobody'"), std::string::npos);
}

TEST(KubeconfigTest, ExecPluginAsKubectlRunsIt) {
  TempDir dir;
  std::string text = Kubeconfig();
  text.replace(text.find("    token: abc123"), 17,
               "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n"
               "      command: bin/get-token\n      args: [--region, eu]\n"
               "      env: [{name: AWS_PROFILE, value: ml}]\n      provideClusterInfo: true");
  WriteFile(dir.path() + "/config", text);
  const Config config = LoadKubeconfig(dir.path() + "/config");
  ASSERT_TRUE(config.exec.has_value());
  EXPECT_EQ(config.exec->api_version, "client.authentication.k8s.io/v1beta1");
  EXPECT_EQ(config.exec->command, dir.path() + "/bin/get-token");  // next to the kubeconfig
  EXPECT_EQ(config.exec->args, (std::vector<std::string>{"--region", "eu"}));
  ASSERT_EQ(config.exec->env.size(), 1U);
  EXPECT_EQ(config.exec->env[0].second, "ml");
  EXPECT_EQ(config.exec->cluster["server"], "https://dev.example.com:6443");
  EXPECT_EQ(config.exec->cluster["certificate-authority-data"], kCaBase64);
}

TEST(KubeconfigTest, CertificateWithoutKeyIsRejected) {
  std::string text = Kubeconfig();
  text.replace(text.find("    token: abc123"), 17, "    client-certificate-data: Q0VSVA==");
  EXPECT_NE(LoadError(text).find("client-certificate and client-key must be given together"),
            std::string::npos);
}

TEST(InClusterTest, ReadsTheServiceAccount) {
  TempDir dir;
  WriteFile(dir.path() + "/token", "sa-token\n");
  WriteFile(dir.path() + "/ca.crt", "CLUSTER CA");
  WriteFile(dir.path() + "/namespace", "autodist-system");
  const Config c = LoadInCluster(
      {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir.path());
  EXPECT_EQ(c.server, "https://10.96.0.1:443");
  EXPECT_EQ(c.token_file, dir.path() + "/token");
  EXPECT_EQ(c.ca_pem, "CLUSTER CA");
  EXPECT_EQ(c.ns, "autodist-system");

  const Config v6 = LoadInCluster(
      {{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir.path());
  EXPECT_EQ(v6.server, "https://[fd00::1]:443");
}

TEST(InClusterTest, OutsideAPodOrWithoutTheTokenFails) {
  TempDir dir;
  EXPECT_THROW(LoadInCluster({}, dir.path()), Error);
  try {
    LoadInCluster({{"KUBERNETES_SERVICE_HOST", "h"}, {"KUBERNETES_SERVICE_PORT", "1"}}, dir.path());
    FAIL() << "loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find(dir.path() + "/token"), std::string::npos);
  }
}

}  // namespace
}  // namespace autodist::kube
