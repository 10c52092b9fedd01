// The client over HTTPS, as it runs in a cluster: the server is verified against the
// configured CA (in-cluster: the service account's ca.crt) and the bearer token is sent. The
// certificates are made with the openssl CLI; the test is skipped where there is none.
#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <mutex>

#include "operator/kube/api_error.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "runtime/common/error.h"
#include "tests/k8s/test_util.h"

namespace autodist::kube {
namespace {

using k8s::testing::ReadFile;
using k8s::testing::TempDir;
using k8s::testing::WriteFile;
using web::http::experimental::listener::http_listener;

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// An HTTPS server answering every GET with a ConfigMap, recording the Authorization header.
class TlsServer {
 public:
  TlsServer(const std::string& cert, const std::string& key) : port_(FreePort()) {
    web::http::experimental::listener::http_listener_config config;
    config.set_ssl_context_callback([cert, key](boost::asio::ssl::context& ctx) {
      ctx.use_certificate_chain_file(cert);
      ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
    });
    listener_ = std::make_unique<http_listener>(url(), config);
    listener_->support([this](web::http::http_request request) {
      {
        std::lock_guard lock(mutex_);
        auto it = request.headers().find("Authorization");
        authorization_ = it == request.headers().end() ? "" : it->second;
      }
      request.reply(web::http::status_codes::OK,
                    R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"}})",
                    "application/json");
    });
    listener_->open().wait();
  }
  ~TlsServer() { listener_->close().wait(); }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  std::string authorization() {
    std::lock_guard lock(mutex_);
    return authorization_;
  }

 private:
  int port_;
  std::unique_ptr<http_listener> listener_;
  std::mutex mutex_;
  std::string authorization_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!k8s::testing::MakeSelfSignedCertificate(dir_.path(), "server") ||
        !k8s::testing::MakeSelfSignedCertificate(dir_.path(), "other")) {
      GTEST_SKIP() << "no openssl CLI to make certificates";
    }
    server_ = std::make_unique<TlsServer>(dir_.path() + "/server.crt", dir_.path() + "/server.key");
  }
  TempDir dir_;
  std::unique_ptr<TlsServer> server_;
};

TEST_F(TlsTest, InClusterConfigVerifiesTheServerAndSendsTheToken) {
  WriteFile(dir_.path() + "/token", "sa-token\n");
  WriteFile(dir_.path() + "/ca.crt", ReadFile(dir_.path() + "/server.crt"));
  const Config config =
      LoadInCluster({{"KUBERNETES_SERVICE_HOST", "127.0.0.1"},
                     {"KUBERNETES_SERVICE_PORT", std::to_string(server_->port())}},
                    dir_.path());
  Client client(config);
  EXPECT_EQ(client.Get(resources::kConfigMaps, "default", "x")["metadata"]["name"], "x");
  EXPECT_EQ(server_->authorization(), "Bearer sa-token");
}

TEST_F(TlsTest, AnUnknownCertificateAuthorityIsRefused) {
  Config config;
  config.server = server_->url();
  config.source = "test";
  config.ca_pem = ReadFile(dir_.path() + "/other.crt");
  Client client(config);
  try {
    client.Get(resources::kConfigMaps, "default", "x");
    FAIL() << "an unverified server was trusted";
  } catch (const ApiError&) {
    FAIL() << "a TLS failure is not an API answer";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
  }

  config.insecure_skip_tls_verify = true;  // kubeconfig's insecure-skip-tls-verify
  config.ca_pem.clear();
  config.token = "t";
  Client insecure(config);
  EXPECT_EQ(insecure.Get(resources::kConfigMaps, "default", "x")["metadata"]["name"], "x");
  EXPECT_EQ(server_->authorization(), "Bearer t");
}

}  // namespace
}  // namespace autodist::kube
