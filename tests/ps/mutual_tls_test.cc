// A parameter server of a job with credentials: its gRPC service and its data channel accept the
// job's members only. A client with a forged certificate, another job's, an expired one or none
// (plaintext) is refused, the server logs one line naming why, and goes on serving the job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/compress/push_encoder.h"
#include "runtime/ps/client.h"
#include "runtime/ps/data_channel_client.h"
#include "runtime/ps/service.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/security/certificate_authority.h"
#include "tests/ps/test_util.h"

namespace autodist::ps {
namespace {

using security::CertificateAuthority;
using security::JobCredentials;
using security::Validity;
using std::chrono::hours;
using tensor::Tensor;
using ::testing::HasSubstr;
using testing::Random;

using Credentials = std::shared_ptr<const JobCredentials>;

// What the process writes to stderr while it lives, read as it comes: a server logs a refusal
// from its own thread, after the refused client may already have heard of it.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    EXPECT_EQ(pipe(pipe_), 0);
    saved_ = dup(STDERR_FILENO);
    dup2(pipe_[1], STDERR_FILENO);
    reader_ = std::thread([this] {
      char buffer[4096];
      ssize_t got = 0;
      while ((got = read(pipe_[0], buffer, sizeof buffer)) > 0) {
        const std::lock_guard lock(mutex_);
        text_.append(buffer, static_cast<size_t>(got));
      }
    });
  }
  ~StderrCapture() {
    std::fflush(stderr);
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    close(pipe_[1]);
    reader_.join();
    close(pipe_[0]);
  }
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;

  // What was written so far, once it holds `part` or 10 s passed.
  std::string WaitFor(const std::string& part) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      {
        const std::lock_guard lock(mutex_);
        if (text_.find(part) != std::string::npos || std::chrono::steady_clock::now() > deadline) {
          return text_;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  int pipe_[2] = {-1, -1};
  int saved_ = -1;
  std::thread reader_;
  std::mutex mutex_;
  std::string text_;
};

struct BadClient {
  std::string name;
  Credentials credentials;  // nullptr: plaintext
  std::string server_log;   // what the server's refusal says
};

class MutualTlsTest : public ::testing::Test {
 protected:
  MutualTlsTest()
      : job_(CertificateAuthority::Create("team-a/mnist", Validity::For(hours(1)))),
        server_(Issue(job_, "ps-0")),
        worker_(Issue(job_, "worker-0")) {}

  static Credentials Issue(const CertificateAuthority& authority, const std::string& member,
                           const Validity& validity = Validity::For(hours(1))) {
    return std::make_shared<const JobCredentials>(authority.Issue(member, validity));
  }

  // A certificate of `authority` from a client that trusts the job's server: it is the server's
  // check, not the client's own, that must stop it.
  Credentials Intruder(const CertificateAuthority& authority) const {
    JobCredentials credentials = authority.Issue("worker-0", Validity::For(hours(1)));
    credentials.ca = job_.certificate();
    return std::make_shared<const JobCredentials>(std::move(credentials));
  }

  std::vector<BadClient> BadClients() const {
    const auto now = std::chrono::system_clock::now();
    return {
        {"forged", Intruder(CertificateAuthority::Create("team-a/mnist", Validity::For(hours(1)))),
         "the certificate of 'worker-0' is not issued by this job's CA"},
        {"another job's",
         Intruder(CertificateAuthority::Create("team-b/mnist", Validity::For(hours(1)))),
         "the certificate of 'worker-0' is not issued by this job's CA"},
        {"expired", Issue(job_, "worker-0", {now - hours(3), now - hours(2)}),
         "the certificate of 'worker-0' has expired"},
        {"plaintext", nullptr, ""},
    };
  }

  void SetUp() override {
    service_ = std::make_unique<ParameterServerService>();
    server_rpc_ = std::make_unique<rpc::RpcServer>(
        "127.0.0.1:0", std::vector<grpc::Service*>{service_.get()}, rpc::WithCredentials(server_));
    port_ = service_->ServeDataChannel("127.0.0.1", server_);
    PsInitRequest init;
    init.tensors = {{"p"}};
    init.optimizer = "sgd";
    init.optimizer_options = {{"lr", "0.5"}};
    init.num_workers = 1;
    init.total_replicas = 1;
    init.values.emplace("p", Random({4, 2}, 1));
    Client(worker_)->Init(init);
  }
  void TearDown() override {
    service_->Shutdown();
    server_rpc_.reset();
  }

  std::unique_ptr<PsClient> Client(const Credentials& credentials,
                                   std::chrono::milliseconds deadline = std::chrono::minutes(1)) {
    return std::make_unique<PsClient>("ps-0", server_rpc_->endpoint(),
                                      rpc::WithCredentials(credentials), deadline);
  }

  // One Step over the data channel with `credentials`; its error, "" when it succeeded.
  std::string DataChannelStep(const Credentials& credentials) {
    const Tensor gradient = Random({4, 2}, 7);
    PsStepRequest request;
    request.step = step_;
    request.learning_rate = 0.5;
    request.gradients["p"].dense = &gradient;
    compress::PushEncoder encoder;
    try {
      PsDataChannelClient channel("127.0.0.1", port_, std::chrono::seconds(10), credentials);
      channel.Step(request, encoder, "parameter server ps-0: Step");
      ++step_;
      return "";
    } catch (const Error& error) {
      return error.what();
    }
  }

  CertificateAuthority job_;
  Credentials server_;
  Credentials worker_;
  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<rpc::RpcServer> server_rpc_;
  int port_ = 0;
  int64_t step_ = 0;
};

TEST_F(MutualTlsTest, TheGrpcServiceRefusesEachBadClientWithALogLineAndKeepsServing) {
  for (const BadClient& bad : BadClients()) {
    SCOPED_TRACE(bad.name);
    StderrCapture capture;
    try {
      Client(bad.credentials, std::chrono::milliseconds(1500))->Stats();
      ADD_FAILURE() << "the " << bad.name << " client got through";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kUnavailable) << error.what();
    }
    const std::string expected =
        bad.server_log.empty()
            ? "RPC: refused a client that does not speak TLS (a plaintext client?)"
            : "RPC server 127.0.0.1:0: refused a client: " + bad.server_log;
    EXPECT_THAT(capture.WaitFor(expected), HasSubstr(expected));
    // The job's own worker still gets through.
    EXPECT_EQ(Client(worker_)->Stats().updates, 0);
  }
}

TEST_F(MutualTlsTest, TheDataChannelRefusesEachBadClientWithALogLineAndKeepsServing) {
  ASSERT_EQ(DataChannelStep(worker_), "");
  for (const BadClient& bad : BadClients()) {
    SCOPED_TRACE(bad.name);
    StderrCapture capture;
    const std::string error = DataChannelStep(bad.credentials);
    EXPECT_THAT(error, HasSubstr("data channel 127.0.0.1:" + std::to_string(port_)));
    const std::string expected = bad.server_log.empty()
                                     ? "the peer does not speak TLS (a plaintext client?)"
                                     : bad.server_log;
    const std::string log = capture.WaitFor(expected);
    EXPECT_THAT(log, HasSubstr("data channel: refused a connection from 127.0.0.1:"));
    EXPECT_THAT(log, HasSubstr(expected));
    EXPECT_EQ(DataChannelStep(worker_), "");
  }
  EXPECT_EQ(Client(worker_)->Stats().updates, 1 + 4);
}

TEST_F(MutualTlsTest, AWorkerRefusesAServerOfAnotherJob) {
  // The server of this test is team-a's; a worker of team-b trusts only team-b's CA.
  const auto other = CertificateAuthority::Create("team-b/mnist", Validity::For(hours(1)));
  try {
    Client(Issue(other, "worker-0"), std::chrono::milliseconds(1500))->Stats();
    FAIL() << "a worker of team-b talked to team-a's parameter server";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  }
  const std::string error = DataChannelStep(Issue(other, "worker-0"));
  EXPECT_THAT(error, HasSubstr("the certificate of 'ps-0' is not issued by this job's CA"));
}

}  // namespace
}  // namespace autodist::ps
