// TLS over a connected socket pair: mutual authentication by the job's CA, and each refusal
// named on the side that refuses.
#include "runtime/security/tls_context.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include "runtime/common/error.h"
#include "runtime/security/certificate_authority.h"

namespace autodist::security {
namespace {

using std::chrono::hours;
using ::testing::HasSubstr;

struct SocketPair {
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~SocketPair() {
    close(fds[0]);
    close(fds[1]);
  }
  int fds[2] = {-1, -1};
};

// Runs the server's handshake on one end of `pair` and the client's on the other; returns the
// server's error ("" when it accepted) and, when asked, both sessions (the pair stays open).
std::string ServerError(SocketPair& pair, const JobCredentials& server,
                        const JobCredentials& client,
                        std::unique_ptr<TlsSession>* server_session = nullptr,
                        std::unique_ptr<TlsSession>* client_session = nullptr) {
  const TlsContext server_context(server, TlsContext::Side::kServer);
  const TlsContext client_context(client, TlsContext::Side::kClient);
  // In TLS 1.3 the client is done before the server has checked the client's certificate.
  auto client_side = std::async(std::launch::async, [&]() -> std::unique_ptr<TlsSession> {
    try {
      return client_context.Handshake(pair.fds[1], "server");
    } catch (const Error&) {
      return nullptr;
    }
  });
  std::string error;
  try {
    auto session = server_context.Handshake(pair.fds[0], "client");
    if (server_session != nullptr) *server_session = std::move(session);
  } catch (const Error& e) {
    error = e.what();
    shutdown(pair.fds[0], SHUT_RDWR);
  }
  auto session = client_side.get();
  if (client_session != nullptr) *client_session = std::move(session);
  return error;
}

TEST(TlsContext, MembersOfOneJobTalkAndKnowEachOthersNames) {
  const auto authority = CertificateAuthority::Create("local/job", Validity::For(hours(1)));
  SocketPair pair;
  std::unique_ptr<TlsSession> server;
  std::unique_ptr<TlsSession> client;
  ASSERT_EQ(ServerError(pair, authority.Issue("ps-0", Validity::For(hours(1))),
                        authority.Issue("worker-0", Validity::For(hours(1))), &server, &client),
            "");
  ASSERT_TRUE(server && client);
  EXPECT_EQ(server->peer_member(), "worker-0");
  EXPECT_EQ(client->peer_member(), "ps-0");
  const std::string message(100000, 'x');  // several records
  auto writer = std::async(std::launch::async, [&] {
    size_t done = 0;
    while (done < message.size()) {
      const ssize_t wrote = client->Write(message.data() + done, message.size() - done);
      if (wrote <= 0) return false;
      done += static_cast<size_t>(wrote);
    }
    return true;
  });
  std::string received(message.size(), '\0');
  size_t done = 0;
  while (done < received.size()) {
    const ssize_t got = server->Read(received.data() + done, received.size() - done);
    ASSERT_GT(got, 0);
    done += static_cast<size_t>(got);
  }
  EXPECT_TRUE(writer.get());
  EXPECT_EQ(received, message);
}

TEST(TlsContext, TheServerRefusesAnotherJobsAnExpiredAndNoTlsClientSayingWhy) {
  const auto authority = CertificateAuthority::Create("local/job", Validity::For(hours(1)));
  const JobCredentials server = authority.Issue("ps-0", Validity::For(hours(1)));
  const auto other = CertificateAuthority::Create("local/other", Validity::For(hours(1)));
  // The intruder trusts the server (the CA certificate is no secret), so that it is the server's
  // check that refuses it.
  JobCredentials intruder = other.Issue("worker-0", Validity::For(hours(1)));
  intruder.ca = authority.certificate();
  SocketPair first;
  EXPECT_THAT(ServerError(first, server, intruder),
              HasSubstr("client: the certificate of 'worker-0' is not issued by this job's CA"));
  const auto now = std::chrono::system_clock::now();
  SocketPair second;
  EXPECT_THAT(
      ServerError(second, server, authority.Issue("worker-0", {now - hours(3), now - hours(2)})),
      HasSubstr("the certificate of 'worker-0' has expired"));

  SocketPair pair;
  const TlsContext context(server, TlsContext::Side::kServer);
  const std::string plaintext = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(write(pair.fds[1], plaintext.data(), plaintext.size()),
            static_cast<ssize_t>(plaintext.size()));
  try {
    context.Handshake(pair.fds[0], "data channel: refused a connection from 10.0.0.9:4000");
    FAIL() << "a plaintext client was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("refused a connection from 10.0.0.9:4000: the peer does "
                                        "not speak TLS (a plaintext client?)"));
  }
}

TEST(TlsContext, AClientRefusesAServerOfAnotherJob) {
  const auto authority = CertificateAuthority::Create("local/job", Validity::For(hours(1)));
  const auto other = CertificateAuthority::Create("local/other", Validity::For(hours(1)));
  SocketPair pair;
  const TlsContext server(other.Issue("ps-0", Validity::For(hours(1))), TlsContext::Side::kServer);
  const TlsContext client(authority.Issue("worker-0", Validity::For(hours(1))),
                          TlsContext::Side::kClient);
  auto server_side = std::async(std::launch::async, [&] {
    try {
      server.Handshake(pair.fds[0], "client");
    } catch (const Error&) {
    }
  });
  try {
    client.Handshake(pair.fds[1], "data channel 10.0.0.3:7001");
    FAIL() << "the client accepted another job's server";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("data channel 10.0.0.3:7001: the certificate of 'ps-0' "
                                        "is not issued by this job's CA"));
  }
  shutdown(pair.fds[1], SHUT_RDWR);
  server_side.get();
}

}  // namespace
}  // namespace autodist::security
