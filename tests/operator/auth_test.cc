// Authenticating to the API server as the operator does on a real cluster, against the double
// served over HTTPS with its own CA and requiring a bearer token: the in-cluster path (CA file,
// token file) keeps working when the token is rotated mid-run (a 401 makes the client read the
// file again), and kubeconfig `exec` credential plugins (client.authentication.k8s.io/v1) are run
// for a token, run again when it expires or is refused, and refused clearly when they misbehave.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "operator/kube/api_error.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/exec_credential.h"
#include "operator/kube/resource.h"
#include "runtime/common/error.h"
#include "tests/error_of.h"
#include "tests/k8s/api_server.h"
#include "tests/k8s/http_server.h"
#include "tests/k8s/test_util.h"

namespace autodist::kube {
namespace {

using k8s::testing::ReadFile;
using k8s::testing::TempDir;
using k8s::testing::WriteFile;

// A shell script plugin in `dir`: prints an ExecCredential with the token in `dir`/plugin-token
// (and `extra` inside status), counts its runs in `dir`/runs, and keeps KUBERNETES_EXEC_INFO and
// PLUGIN_ENV for the test to read.
std::string WritePlugin(const std::string& dir, const std::string& extra = "") {
  const std::string path = dir + "/plugin.sh";
  WriteFile(path,
            "#!/bin/sh\n"
            "echo run >> '" +
                dir +
                "/runs'\n"
                "printf '%s' \"$KUBERNETES_EXEC_INFO\" > '" +
                dir +
                "/exec-info'\n"
                "printf '%s' \"$PLUGIN_ENV\" > '" +
                dir +
                "/plugin-env'\n"
                "echo 'plugin diagnostics go to stderr' >&2\n"
                "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"" +
                extra +
                "}}' "
                "\"$(cat '" +
                dir + "/plugin-token')\"\n");
  chmod(path.c_str(), 0755);
  return path;
}

int Runs(const std::string& dir) {
  const std::string text = ReadFile(dir + "/runs");
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!k8s::testing::MakeSelfSignedCertificate(dir_.path(), "server"))
      GTEST_SKIP() << "no openssl CLI to make certificates";
    WriteFile(token_file(), "token-1\n");
    k8s::ApiServerOptions options;
    options.bearer_token_file = token_file();
    api_ = std::make_unique<k8s::ApiServer>(options);
    https_ = std::make_unique<k8s::HttpServer>(
        *api_, "127.0.0.1", 0,
        k8s::TlsFiles{dir_.path() + "/server.crt", dir_.path() + "/server.key"});
  }
  std::string token_file() const { return dir_.path() + "/server-token"; }
  // A kubeconfig whose user runs `plugin`.
  std::string Kubeconfig(const std::string& plugin) {
    const std::string path = dir_.path() + "/kubeconfig";
    WriteFile(path,
              "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
              "clusters:\n- name: k\n  cluster:\n    server: " +
                  https_->url() +
                  "\n"
                  "    certificate-authority: server.crt\n"
                  "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                  "users:\n- name: u\n  user:\n    exec:\n"
                  "      apiVersion: client.authentication.k8s.io/v1\n"
                  "      command: " +
                  plugin +
                  "\n"
                  "      args: [\"--cluster\", \"k\"]\n"
                  "      env: [{name: PLUGIN_ENV, value: from-kubeconfig}]\n"
                  "      interactiveMode: Never\n"
                  "      provideClusterInfo: true\n");
    return path;
  }

  TempDir dir_;
  std::unique_ptr<k8s::ApiServer> api_;
  std::unique_ptr<k8s::HttpServer> https_;
};

TEST_F(AuthTest, TheDoubleRefusesRequestsWithoutItsToken) {
  Config config;
  config.server = https_->url();
  config.source = "test";
  config.ca_pem = ReadFile(dir_.path() + "/server.crt");
  config.token = "not-the-token";
  Client client(config);
  try {
    client.List(resources::kConfigMaps, "default");
    FAIL() << "an unknown token was let in";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.http_code(), 401);
    EXPECT_EQ(e.reason(), "Unauthorized");
  }
}

TEST_F(AuthTest, InClusterTokenRotatedMidRunIsReadAgain) {
  std::filesystem::create_directories(dir_.path() + "/sa");
  WriteFile(dir_.path() + "/sa/token", "token-1\n");
  WriteFile(dir_.path() + "/sa/ca.crt", ReadFile(dir_.path() + "/server.crt"));
  const Config config = LoadInCluster({{"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
                                       {"KUBERNETES_SERVICE_PORT", std::to_string(https_->port())}},
                                      dir_.path() + "/sa");
  Client client(config);
  EXPECT_EQ(client
                .Create(resources::kConfigMaps, "default",
                        {{"metadata", {{"name", "before"}}}, {"data", {{"k", "v"}}}})
                .value("/metadata/name"_json_pointer, std::string()),
            "before");
  // The kubelet rotates the projected token; the server takes only the new one from now on.
  WriteFile(dir_.path() + "/sa/token", "token-2\n");
  WriteFile(token_file(), "token-2\n");
  // The client holds token-1 for another minute (its re-read period); the server's 401 makes it
  // read the file again at once, and the request goes through.
  EXPECT_EQ(client.Get(resources::kConfigMaps, "default", "before")["data"]["k"], "v");
}

TEST_F(AuthTest, AnExecPluginsTokenIsUsedUntilTheServerRefusesIt) {
  WriteFile(dir_.path() + "/plugin-token", "token-1");
  const Config config = LoadKubeconfig(Kubeconfig(WritePlugin(dir_.path())));
  ASSERT_TRUE(config.exec.has_value());
  Client client(config);
  client.List(resources::kConfigMaps, "default");
  client.List(resources::kConfigMaps, "default");
  EXPECT_EQ(Runs(dir_.path()), 1);  // no expiry: kept
  // What kubectl gives a plugin: its env, and the cluster (provideClusterInfo), not interactive.
  EXPECT_EQ(ReadFile(dir_.path() + "/plugin-env"), "from-kubeconfig");
  const nlohmann::json info = nlohmann::json::parse(ReadFile(dir_.path() + "/exec-info"));
  EXPECT_EQ(info["kind"], "ExecCredential");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], https_->url());
  EXPECT_FALSE(info["spec"]["cluster"].value("certificate-authority-data", "").empty());

  // Rotated: the server refuses the held token, the plugin runs again, the request goes through.
  WriteFile(dir_.path() + "/plugin-token", "token-2");
  WriteFile(token_file(), "token-2\n");
  client.List(resources::kConfigMaps, "default");
  EXPECT_EQ(Runs(dir_.path()), 2);
}

TEST_F(AuthTest, AnExpiringTokenIsRenewedBeforeItExpires) {
  WriteFile(dir_.path() + "/plugin-token", "token-1");
  // Expired already (or within the ten seconds of slack): every request runs the plugin.
  const std::string plugin =
      WritePlugin(dir_.path(), ",\"expirationTimestamp\":\"2020-01-01T00:00:00Z\"");
  Client client(LoadKubeconfig(Kubeconfig(plugin)));
  client.List(resources::kConfigMaps, "default");
  client.List(resources::kConfigMaps, "default");
  EXPECT_EQ(Runs(dir_.path()), 2);
}

TEST(ExecCredentialTest, BadPluginOutputIsNamed) {
  ExecPlugin plugin{"client.authentication.k8s.io/v1",   "get-token", {}, {}, nullptr,
                    "kubeconfig 'k': users[u].user.exec"};
  const auto error = [&](const std::string& output) {
    return std::string(testing::ErrorOf([&] { ParseExecCredential(output, plugin); }).what());
  };
  EXPECT_NE(error("not json")
                .find("kubeconfig 'k': users[u].user.exec: 'get-token' printed no "
                      "ExecCredential JSON"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1",
                      "status":{"token":"t"}})")
                .find("expected 'client.authentication.k8s.io/v1'"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                      "status":{"clientCertificateData":"x","clientKeyData":"y"}})")
                .find("answers with a client certificate"),
            std::string::npos);
  EXPECT_NE(error(R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
                      "status":{"token":"t","expirationTimestamp":"tomorrow"}})")
                .find("expected RFC 3339"),
            std::string::npos);
  const ExecToken token = ParseExecCredential(
      R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
          "status":{"token":"t","expirationTimestamp":"2026-11-26T12:00:00+01:00"}})",
      plugin);
  EXPECT_EQ(token.token, "t");
  ASSERT_TRUE(token.expiry.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*token.expiry), 1795690800);  // 11:00Z
}

TEST(ExecCredentialTest, APluginThatFailsOrHangsIsNamed) {
  TempDir dir;
  ExecPlugin plugin{"client.authentication.k8s.io/v1",
                    dir.path() + "/missing",
                    {},
                    {},
                    nullptr,
                    "users[u].user.exec"};
  Error missing = testing::ErrorOf([&] { RunExecPlugin(plugin); });
  EXPECT_EQ(missing.code(), ErrorCode::kUnavailable);
  EXPECT_NE(std::string(missing.what()).find("cannot run '" + plugin.command + "'"),
            std::string::npos)
      << missing.what();

  plugin.command = "sh";
  plugin.args = {"-c", "echo 'token expired, log in again' >&2; exit 3"};
  EXPECT_NE(std::string(testing::ErrorOf([&] { RunExecPlugin(plugin); }).what())
                .find("'sh' failed (exit status 3)"),
            std::string::npos);

  plugin.args = {"-c", "sleep 5"};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(std::string(testing::ErrorOf([&] {
                          RunExecPlugin(plugin, std::chrono::milliseconds(200));
                        }).what())
                .find("did not finish within"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

}  // namespace
}  // namespace autodist::kube
