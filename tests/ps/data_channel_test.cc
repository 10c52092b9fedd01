// The parameter server's data channel (ps_data_channel.h) as such: discovery and fallback, and
// malformed frames straight from a socket. Step semantics on the channel are covered by the
// PsServiceTest and PsCompressedPushTest suites, which run once per transport.
#include "runtime/ps/data_channel.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "proto/ps_service.pb.h"
#include "runtime/ps/client.h"
#include "runtime/ps/service.h"
#include "runtime/rpc/frame_socket.h"
#include "runtime/rpc/grpc_helpers.h"
#include "tests/ps/test_util.h"

namespace autodist::ps {
namespace {

using tensor::Tensor;
using testing::ErrorOf;
using ::testing::HasSubstr;
using testing::Random;

class PsDataChannelTest : public ::testing::Test {
 protected:
  // A server hosting float32 'p' of [4, 2] for `workers` workers, one replica each.
  void Start(bool data_channel, int workers = 1, ParameterServerOptions options = {}) {
    service_ = std::make_unique<ParameterServerService>(options);
    server_ = std::make_unique<rpc::RpcServer>("127.0.0.1:0",
                                               std::vector<grpc::Service*>{service_.get()});
    if (data_channel) port_ = service_->ServeDataChannel("127.0.0.1");
    PsInitRequest init;
    init.tensors = {{"p"}};
    init.optimizer = "sgd";
    init.optimizer_options = {{"lr", "0.5"}};
    init.num_workers = workers;
    init.total_replicas = workers;
    init.values.emplace("p", Random({4, 2}, 1));
    Client()->Init(init);
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    server_.reset();
  }
  std::unique_ptr<PsClient> Client() {
    return std::make_unique<PsClient>("ps-0", server_->endpoint());
  }
  // A socket to the channel on which the test writes bytes of its own choosing.
  int RawConnection() const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port_));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    return fd;
  }
  // Sends `bytes` on a fresh connection and returns the server's STATUS; the server must then
  // close the connection. `bytes` must end where the server stops reading: a socket closed with
  // unread data resets the connection, and the reset may overtake the STATUS.
  autodist::proto::DataChannelStatus StatusAfter(const std::string& bytes) const {
    const int fd = RawConnection();
    EXPECT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
    rpc::FrameSocket socket(fd, "test");
    const std::optional<rpc::FrameHead> head = socket.ReadHead();
    autodist::proto::DataChannelStatus status;
    EXPECT_TRUE(head.has_value());
    if (!head.has_value()) return status;
    EXPECT_EQ(head->kind, kStatusFrame);
    EXPECT_TRUE(status.ParseFromString(head->meta));
    EXPECT_FALSE(socket.ReadHead().has_value()) << "the connection stays open";
    return status;
  }
  // One complete Step of one gradient piece, written by hand.
  static std::string StepBytes(const autodist::proto::TensorPiece& piece, uint64_t data_bytes,
                               const std::string& data) {
    autodist::proto::StepHeader header;
    header.set_worker(0);
    return Frame(kStepHeaderFrame, header.SerializeAsString(), 0) +
           Frame(kGradientFrame, piece.SerializeAsString(), data_bytes) + data +
           Frame(kEndFrame, "", 0);
  }
  static std::string Frame(uint32_t kind, const std::string& meta, uint64_t data_bytes,
                           uint32_t magic = rpc::kFrameMagic) {
    struct {
      uint32_t magic;
      uint32_t kind;
      uint64_t meta_bytes;
      uint64_t data_bytes;
    } head{magic, kind, meta.size(), data_bytes};
    std::string out(sizeof head, '\0');
    std::memcpy(out.data(), &head, sizeof head);
    return out + meta;
  }

  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<rpc::RpcServer> server_;
  int port_ = 0;
};

PsStepRequest StepOf(int worker, int64_t step, const Tensor* gradient) {
  PsStepRequest request;
  request.worker = worker;
  request.first_replica = worker;
  request.step = step;
  request.learning_rate = 0.5;
  request.gradients["p"].dense = gradient;
  return request;
}

TEST_F(PsDataChannelTest, ClientsFindTheChannelOrStayOnGrpcWithTheSameResult) {
  const Tensor g = Random({4, 2}, 2);
  Start(true);
  auto on_channel = Client();
  EXPECT_TRUE(on_channel->UsesDataChannel());
  EXPECT_GT(port_, 0);
  const Tensor after_channel = on_channel->Step(StepOf(0, 0, &g)).values.at("p");

  Start(false);
  auto on_grpc = Client();
  EXPECT_FALSE(on_grpc->UsesDataChannel());
  const Tensor after_grpc = on_grpc->Step(StepOf(0, 0, &g)).values.at("p");
  ASSERT_EQ(after_channel.numel(), after_grpc.numel());
  EXPECT_EQ(std::memcmp(after_channel.raw(), after_grpc.raw(), after_grpc.nbytes()), 0);
}

TEST_F(PsDataChannelTest, ARejectedStepLeavesTheConnectionUsable) {
  Start(true);
  auto client = Client();
  ASSERT_TRUE(client->UsesDataChannel());
  const Tensor wrong = Random({2, 4}, 3);
  const Error error = ErrorOf([&] { client->Step(StepOf(0, 0, &wrong)); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("parameter server ps-0 (" + server_->endpoint() +
                                      "): Step: worker 0: gradient of 'p' has shape [2, 4], "
                                      "expected [4, 2]"));
  const Tensor g = Random({4, 2}, 4);
  for (int64_t step = 0; step < 3; ++step) {
    EXPECT_EQ(client->Step(StepOf(0, step, &g)).versions.at("p"), step + 1);
  }
  EXPECT_EQ(client->Stats().pushes, 3);
}

TEST_F(PsDataChannelTest, MalformedFramesAreAnsweredAndTheServerKeepsServing) {
  ParameterServerOptions options;
  options.max_tensor_bytes = 1 << 20;
  Start(true, 1, options);
  const auto invalid = static_cast<int32_t>(grpc::StatusCode::INVALID_ARGUMENT);

  auto status = StatusAfter(Frame(kStepHeaderFrame, "", 0, 0x12345678));
  EXPECT_EQ(status.code(), invalid);
  EXPECT_THAT(status.message(), HasSubstr("a frame starts with 0x12345678, not the magic"));

  std::string huge_meta = Frame(kStepHeaderFrame, "", 0);
  const uint64_t meta_bytes = uint64_t{1} << 40;
  std::memcpy(huge_meta.data() + 8, &meta_bytes, sizeof meta_bytes);
  status = StatusAfter(huge_meta);
  EXPECT_EQ(status.code(), invalid);
  EXPECT_THAT(status.message(), HasSubstr("meta part of 1099511627776 bytes is larger than"));

  status = StatusAfter(Frame(kGradientFrame, "", 0));
  EXPECT_EQ(status.code(), invalid);
  EXPECT_THAT(status.message(), HasSubstr("a request starts with a STEP_HEADER frame (kind 1), "
                                          "got kind 2"));

  autodist::proto::StepHeader header;
  status = StatusAfter(Frame(kStepHeaderFrame, header.SerializeAsString(), 0) +
                       Frame(kVersionFrame, "", 0));
  EXPECT_EQ(status.code(), invalid);
  EXPECT_THAT(status.message(), HasSubstr("frame kind 4 inside a Step; expected GRADIENT (2) or "
                                          "END (3)"));

  // More data than a tensor may have: refused before any of it is read.
  autodist::proto::TensorPiece piece;
  piece.set_name("p");
  piece.set_data_type(1);
  piece.add_dims(4);
  piece.add_dims(2);
  status = StatusAfter(Frame(kStepHeaderFrame, header.SerializeAsString(), 0) +
                       Frame(kGradientFrame, piece.SerializeAsString(), uint64_t{1} << 21));
  EXPECT_EQ(status.code(), invalid);
  EXPECT_THAT(status.message(), HasSubstr("a gradient frame of 2097152 data bytes is larger than "
                                          "the limit of 1048576 bytes"));

  // A well-framed Step the server rejects is answered on a connection that stays open.
  const int fd = RawConnection();
  const std::string short_data = StepBytes(piece, 16, std::string(16, '\0'));
  ASSERT_EQ(send(fd, short_data.data(), short_data.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(short_data.size()));
  rpc::FrameSocket socket(fd, "test");
  std::optional<rpc::FrameHead> head = socket.ReadHead();
  ASSERT_TRUE(head.has_value());
  ASSERT_EQ(head->kind, kStatusFrame);
  ASSERT_TRUE(status.ParseFromString(head->meta));
  EXPECT_EQ(status.code(), invalid);
  EXPECT_THAT(status.message(), HasSubstr("tensor 'p' is incomplete: 16 of 32 bytes"));
  const std::string whole = StepBytes(piece, 32, std::string(32, '\0'));
  ASSERT_EQ(send(fd, whole.data(), whole.size(), MSG_NOSIGNAL), static_cast<ssize_t>(whole.size()));
  head = socket.ReadHead();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->kind, kVersionFrame);

  // And a real client still trains.
  const Tensor g = Random({4, 2}, 5);
  auto client = Client();
  ASSERT_TRUE(client->UsesDataChannel());
  EXPECT_EQ(client->Step(StepOf(0, 1, &g)).versions.at("p"), 2);
}

TEST_F(PsDataChannelTest, ManyShortLivedClientsAndConcurrentStreams) {
  Start(true, 2);
  const Tensor g = Random({4, 2}, 6);
  // Each worker on its own client, each step on a fresh one: connections come and go.
  for (int64_t step = 0; step < 10; ++step) {
    auto other =
        std::async(std::launch::async, [&] { return Client()->Step(StepOf(1, step, &g)); });
    const PsValues mine = Client()->Step(StepOf(0, step, &g));
    const PsValues theirs = other.get();
    EXPECT_EQ(mine.versions.at("p"), step + 1);
    EXPECT_EQ(std::memcmp(mine.values.at("p").raw(), theirs.values.at("p").raw(), 32), 0);
  }
  // Two concurrent Steps through one client use two connections: neither waits for the other.
  auto shared = Client();
  auto first = std::async(std::launch::async, [&] { return shared->Step(StepOf(0, 10, &g)); });
  const PsValues second = shared->Step(StepOf(1, 10, &g));
  EXPECT_EQ(first.get().versions.at("p"), 11);
  EXPECT_EQ(second.versions.at("p"), 11);
}

TEST_F(PsDataChannelTest, AServerStoppedUnderAClientFailsItsStepAsUnavailable) {
  Start(true, 2);
  auto client = Client();
  ASSERT_TRUE(client->UsesDataChannel());
  const Tensor g = Random({4, 2}, 7);
  // Worker 1 never pushes: the Step waits until the server shuts down.
  auto waiting = std::async(std::launch::async, [&] { return client->Step(StepOf(0, 0, &g)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  service_->Shutdown();
  const Error error = ErrorOf([&] { waiting.get(); });
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("parameter server ps-0 (" + server_->endpoint() + "): Step"));
}

TEST(FrameSocketTest, ConnectAndListenErrorsNameTheAddress) {
  // A port nobody listens on: a listener's port, once the listener is gone.
  int port = 0;
  {
    const rpc::TcpListener listener("127.0.0.1");
    port = listener.port();
  }
  Error error =
      ErrorOf([&] { rpc::FrameSocket::Connect("127.0.0.1", port, std::chrono::seconds(5)); });
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("data channel 127.0.0.1:" + std::to_string(port) +
                                      ": cannot connect: Connection refused"));
  error = ErrorOf(
      [&] { rpc::FrameSocket::Connect("no-such-host.invalid", 1, std::chrono::seconds(5)); });
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("data channel no-such-host.invalid:1: cannot resolve"));
  error = ErrorOf([&] { const rpc::TcpListener listener("192.0.2.1"); });  // TEST-NET: not ours
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("data channel: cannot listen on '192.0.2.1'"));
}

}  // namespace
}  // namespace autodist::ps
