// Compressed pushes end to end over gRPC: float16 (exact for halves, rounded otherwise), float16
// with error feedback on a hand-computed sequence, TopK with error feedback draining its
// residual, the bytes a push saves, compressed and uncompressed tensors in one push, one
// residual per replica stream, and malformed encodings that leave the server serving. And
// gradients on a device (a host-backed stand-in for a GPU and its push encoders,
// tests/compress/host_backed_push_stream.h) pushed compressed as the host's are, bit for bit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <memory>

#include "runtime/ps/client.h"
#include "runtime/ps/service.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/tensor/float16.h"
#include "tests/compress/host_backed_push_stream.h"
#include "tests/ps/test_util.h"
#include "tests/tensor/host_backed_memory.h"

namespace autodist::ps {
namespace {

using autodist::proto::StepMessage;
using autodist::proto::TensorPiece;
using tensor::Tensor;
using testing::ErrorOf;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Random;
using testing::Sparse;

class PsCompressedPushTest : public ::testing::TestWithParam<testing::PsTransport> {
 protected:
  // A server hosting `tensors`, all zero, with SGD: a push with learning rate 1 subtracts the
  // mean gradient exactly as decoded, so the values show what arrived.
  void Start(const std::vector<HostedTensor>& tensors, const std::map<std::string, int64_t>& sizes,
             int replicas = 1) {
    service_ = std::make_unique<ParameterServerService>();
    server_ = std::make_unique<rpc::RpcServer>("127.0.0.1:0",
                                               std::vector<grpc::Service*>{service_.get()});
    testing::ServeTransport(*service_, GetParam());
    client_ = std::make_unique<PsClient>("ps-0", server_->endpoint());
    PsInitRequest request;
    request.tensors = tensors;
    request.optimizer = "sgd";
    request.optimizer_options = {{"lr", "1"}};
    request.num_workers = 1;
    request.total_replicas = replicas;
    for (const auto& [name, size] : sizes) {
      request.values[name] = Tensor::Zeros(tensor::DType::kFloat32, {size});
    }
    client_->Init(request);
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    server_.reset();
  }

  // One push of `gradients` by replica `first_replica` for `step`, learning rate 1.
  PsValues Push(int64_t step, const std::map<std::string, GradientRef>& gradients,
                int first_replica = 0) {
    PsStepRequest request;
    request.worker = 0;  // one worker process; its replicas push as streams of their own
    request.first_replica = first_replica;
    request.step = step;
    request.learning_rate = 1.0;
    request.gradients = gradients;
    return client_->Step(request);
  }

  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<rpc::RpcServer> server_;
  std::unique_ptr<PsClient> client_;
};

GradientRef Ref(const Tensor& dense, compress::CompressorKind compression, double fraction = 0.01) {
  GradientRef ref;
  ref.dense = &dense;
  ref.compression = compression;
  ref.topk_fraction = fraction;
  return ref;
}

std::vector<float> Values(const PsValues& reply, const std::string& name) {
  const Tensor& value = reply.values.at(name);
  return {value.data<float>(), value.data<float>() + value.numel()};
}

float Half(float value) { return tensor::HalfToFloat(tensor::FloatToHalf(value)); }

TEST_P(PsCompressedPushTest, Float16IsExactForHalvesAndHalvesTheBytes) {
  Start({{"exact"}, {"rounded"}}, {{"exact", 6}, {"rounded", 500}});
  const Tensor exact = Floats({6}, {0.5F, -3.0F, 1.0F + 0x1p-10F, 0x1p-24F, 65504.0F, 0.0F});
  const Tensor rounded = Random({500}, 1);
  const PsValues reply = Push(0, {{"exact", Ref(exact, compress::CompressorKind::kHorovod)},
                                  {"rounded", Ref(rounded, compress::CompressorKind::kHorovod)}});
  const auto got = Values(reply, "exact");
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], -exact.data<float>()[i]) << i;
  const auto near = Values(reply, "rounded");
  for (size_t i = 0; i < near.size(); ++i) {
    const float g = rounded.data<float>()[i];
    EXPECT_EQ(near[i], -Half(g)) << i;
    EXPECT_NEAR(near[i], -g, std::fabs(g) * 0x1p-11F) << i;
  }
  // Plain float16 keeps no residual.
  EXPECT_FALSE(client_->PushResidual(0, "rounded").has_value());
  EXPECT_EQ(client_->Stats().bytes_pushed, 2 * (6 + 500));          // float32 would be 4 * 506
  EXPECT_EQ(client_->Stats().bytes_pushed_decoded, 4 * (6 + 500));  // what float16 halved
}

// Spacing of float16 in [1, 2) is 2^-10. Per element, the same gradient both steps:
//   a = 1 + 2^-12:      step 0 sends 1 (r = 2^-12); step 1: g' = 1 + 2^-11, a tie, sends 1
//                       (r = 2^-11)
//   b = 1 + 3 * 2^-12:  step 0 sends 1 + 2^-10 (r = -2^-12); step 1: g' = 1 + 2^-11, sends 1
//                       (r = 2^-11)
//   c = 3:              exact, r = 0
// Plain float16 sends 1, 1 + 2^-10 and 3 both steps: the 2^-12s never arrive.
TEST_P(PsCompressedPushTest, Float16ErrorFeedbackCarriesTheResidualAcrossSteps) {
  Start({{"ef"}, {"plain"}}, {{"ef", 3}, {"plain", 3}});
  const Tensor g = Floats({3}, {1.0F + 0x1p-12F, 1.0F + 3 * 0x1p-12F, 3.0F});
  const std::map<std::string, GradientRef> push = {
      {"ef", Ref(g, compress::CompressorKind::kHorovodEF)},
      {"plain", Ref(g, compress::CompressorKind::kHorovod)}};
  PsValues reply = Push(0, push);
  EXPECT_EQ(Values(reply, "ef"), (std::vector<float>{-1.0F, -(1.0F + 0x1p-10F), -3.0F}));
  EXPECT_EQ(*client_->PushResidual(0, "ef"), (std::vector<float>{0x1p-12F, -0x1p-12F, 0.0F}));
  reply = Push(1, push);
  EXPECT_EQ(Values(reply, "ef"), (std::vector<float>{-2.0F, -(2.0F + 0x1p-10F), -6.0F}));
  EXPECT_EQ(*client_->PushResidual(0, "ef"), (std::vector<float>{0x1p-11F, 0x1p-11F, 0.0F}));
  EXPECT_EQ(Values(reply, "plain"), (std::vector<float>{-2.0F, -(2.0F + 0x1p-9F), -6.0F}));
  // What arrived plus what is still owed is exactly what was pushed.
  const auto ef = Values(reply, "ef");
  const auto residual = *client_->PushResidual(0, "ef");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(-ef[i] + residual[i], 2 * g.data<float>()[i]) << i;
}

// 20 elements, fraction 0.25: k = 5. One gradient, then zeros: each step sends the 5 largest of
// what is left, so after 20 / 5 = 4 steps everything arrived and the residual is zero.
TEST_P(PsCompressedPushTest, TopKSendsTheLargestAndTheResidualDrains) {
  Start({{"p"}}, {{"p", 20}});
  std::vector<float> values(20);
  for (size_t i = 0; i < 20; ++i) {
    values[i] = static_cast<float>(i + 1) * (i % 2 == 0 ? 1.0F : -1.0F) * 0.125F;
  }
  const Tensor first = Floats({20}, values);
  const Tensor zero = Tensor::Zeros(tensor::DType::kFloat32, {20});
  PsValues reply = Push(0, {{"p", Ref(first, compress::CompressorKind::kTopKEF, 0.25)}});
  // The 5 largest magnitudes are elements 15..19.
  auto got = Values(reply, "p");
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(got[i], i >= 15 ? -values[i] : 0.0F) << i;
  EXPECT_EQ(client_->Stats().bytes_pushed, 5 * 12);
  for (int64_t step = 1; step < 4; ++step) {
    reply = Push(step, {{"p", Ref(zero, compress::CompressorKind::kTopKEF, 0.25)}});
    const auto residual = *client_->PushResidual(0, "p");
    for (size_t i = 0; i < 20; ++i) {
      // After step s the elements from 15 - 5 s up have arrived.
      const bool sent = static_cast<int64_t>(i) >= 15 - 5 * step;
      EXPECT_EQ(residual[i], sent ? 0.0F : values[i]) << step << "/" << i;
    }
  }
  got = Values(reply, "p");
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(got[i], -values[i]) << i;
  EXPECT_EQ(client_->Stats().bytes_pushed, 4 * 5 * 12);  // float32: 4 * 80
  EXPECT_EQ(client_->Stats().bytes_pushed_decoded, 4 * 4 * 20);
}

TEST_P(PsCompressedPushTest, MixedCompressedUncompressedAndSparseInOnePush) {
  Start({{"raw"}, {"half"}, {"top"}, {"rows", true, 0, true}},
        {{"raw", 4}, {"half", 4}, {"top", 1000}, {"rows", 6}});
  const Tensor raw = Floats({4}, {0.1F, 0.2F, 0.3F, 0.4F});
  const Tensor half = Floats({4}, {0.1F, 0.5F, -2.0F, 1e-3F});
  Tensor top = Tensor::Zeros(tensor::DType::kFloat32, {1000});
  top.data<float>()[123] = 5.0F;
  top.data<float>()[900] = -7.0F;
  top.data<float>()[7] = 0.001F;
  const auto rows = Sparse({1, 4}, Floats({2}, {2.5F, -1.5F}), {6});
  std::map<std::string, GradientRef> push = {
      {"raw", Ref(raw, compress::CompressorKind::kNone)},
      {"half", Ref(half, compress::CompressorKind::kHorovodEF)},
      {"top", Ref(top, compress::CompressorKind::kTopKEF, 0.002)}};  // k = 2
  // Sparse gradients travel as rows whatever the compressor.
  push["rows"].sparse = &rows;
  push["rows"].compression = compress::CompressorKind::kHorovod;
  const PsValues reply = Push(0, push);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(Values(reply, "raw")[i], -raw.data<float>()[i]);
    EXPECT_EQ(Values(reply, "half")[i], -Half(half.data<float>()[i]));
  }
  const auto got = Values(reply, "top");
  EXPECT_EQ(got[123], -5.0F);
  EXPECT_EQ(got[900], 7.0F);
  EXPECT_EQ(got[7], 0.0F);  // not among the 2 largest: waits in the residual
  EXPECT_EQ((*client_->PushResidual(0, "top"))[7], 0.001F);
  EXPECT_EQ(Values(reply, "rows"), (std::vector<float>{0, -2.5F, 0, 0, 1.5F, 0}));
  // 16 raw + 8 halves + 2 pairs + 2 rows and their indices.
  EXPECT_EQ(client_->Stats().bytes_pushed, 16 + 8 + 2 * 12 + (8 + 16));
}

TEST_P(PsCompressedPushTest, EachReplicaStreamHasItsOwnResidual) {
  Start({{"p"}}, {{"p", 1}}, 2);
  const Tensor g0 = Floats({1}, {1.0F + 0x1p-12F});
  const Tensor g1 = Floats({1}, {1.0F + 3 * 0x1p-12F});
  std::vector<std::future<PsValues>> pushes;
  for (int replica = 0; replica < 2; ++replica) {
    pushes.push_back(std::async(std::launch::async, [&, replica] {
      return Push(0, {{"p", Ref(replica == 0 ? g0 : g1, compress::CompressorKind::kHorovodEF)}},
                  replica);
    }));
  }
  for (auto& push : pushes) push.get();
  EXPECT_EQ(*client_->PushResidual(0, "p"), std::vector<float>{0x1p-12F});
  EXPECT_EQ(*client_->PushResidual(1, "p"), std::vector<float>{-0x1p-12F});
}

TEST_P(PsCompressedPushTest, MalformedEncodingsAreRejectedAndTheServerKeepsServing) {
  Start({{"p"}}, {{"p", 6}});
  const Tensor g = Random({6}, 2);
  const Error fraction = ErrorOf([&] {
    Push(0, {{"p", Ref(g, compress::CompressorKind::kTopKEF, 0)}});
  });
  EXPECT_EQ(fraction.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(fraction.what(), HasSubstr("gradient 'p': TopKCompressorEF fraction must be in "
                                         "(0, 1], got 0"));

  auto stub = autodist::proto::ParameterServer::NewStub(rpc::MakeChannel(server_->endpoint()));
  const auto raw_step = [&](const TensorPiece& piece) {
    grpc::ClientContext context;
    auto stream = stub->Step(&context);
    StepMessage message;
    message.mutable_header()->set_worker(3);
    stream->Write(message);
    *message.mutable_gradient() = piece;
    stream->Write(message);
    stream->WritesDone();
    autodist::proto::StepReply reply;
    while (stream->Read(&reply)) {
    }
    return stream->Finish();
  };
  const auto expect_rejected = [&](const TensorPiece& piece, const std::string& message) {
    const grpc::Status status = raw_step(piece);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << message;
    EXPECT_THAT(status.error_message(), HasSubstr("worker 3 step 0: "));
    EXPECT_THAT(status.error_message(), HasSubstr(message));
  };
  TensorPiece piece;
  piece.set_name("p");
  piece.set_data_type(static_cast<int32_t>(tensor::DType::kFloat32));
  piece.add_dims(6);
  piece.set_encoding(static_cast<TensorPiece::Encoding>(5));
  piece.set_data(std::string(12, '\0'));
  expect_rejected(piece, "tensor 'p' has unknown encoding 5");
  piece.set_encoding(TensorPiece::FLOAT16);
  piece.set_data(std::string(11, '\0'));
  expect_rejected(piece, "FLOAT16 tensor 'p': a piece of 11 bytes, not a whole number of halves");
  piece.set_encoding(TensorPiece::TOPK);
  piece.set_data(std::string(8, '\0'));
  piece.add_indices(2);
  piece.add_indices(6);
  expect_rejected(piece, "TOPK tensor 'p': index 6 is outside its 6 elements");
  piece.set_indices(1, 2);
  expect_rejected(piece, "TOPK tensor 'p': index 2 follows 2");
  piece.set_indices(1, 3);
  piece.add_indices(4);  // three ascending indices, two values
  expect_rejected(piece, "tensor 'p' is incomplete: 8 of 12 bytes arrived");

  // Still serving, and nothing of the rejected pushes was applied.
  const PsValues reply = Push(0, {{"p", Ref(g, compress::CompressorKind::kHorovod)}});
  EXPECT_EQ(reply.versions.at("p"), 1);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(Values(reply, "p")[i], -Half(g.data<float>()[i]));
  EXPECT_EQ(client_->Stats().pushes, 1);
}

// A GPU worker's gradient reaches the client still on its device; the client's encoder
// compresses it there (runtime/compress/device_push_encoder.h), and the server gets what a host
// push of the same numbers brings, step after step (the residual is the device stream's own).
TEST_P(PsCompressedPushTest, DeviceGradientsArePushedAsTheHostsAre) {
  static tensor::testing::HostBackedMemory memory;  // the stand-in "GPU" of this test program
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &memory);
  static const bool registered = [] {
    compress::testing::RegisterHostBackedPushEncoders(
        {compress::CompressorKind::kHorovodEF, compress::CompressorKind::kTopKEF});
    return true;
  }();
  ASSERT_TRUE(registered);
  Start({{"ef_host"}, {"ef_device"}, {"topk_host"}, {"topk_device"}},
        {{"ef_host", 300}, {"ef_device", 300}, {"topk_host", 300}, {"topk_device", 300}});
  const int encoded = compress::testing::HostBackedPushStream::encoded;
  PsValues reply;
  for (int64_t step = 0; step < 3; ++step) {
    const Tensor g = Random({300}, static_cast<uint64_t>(40 + step));
    const Tensor on_device = g.To(tensor::Device::Cuda(0));
    reply = Push(step, {{"ef_host", Ref(g, compress::CompressorKind::kHorovodEF)},
                        {"ef_device", Ref(on_device, compress::CompressorKind::kHorovodEF)},
                        {"topk_host", Ref(g, compress::CompressorKind::kTopKEF, 0.1)},
                        {"topk_device", Ref(on_device, compress::CompressorKind::kTopKEF, 0.1)}});
    EXPECT_EQ(Values(reply, "ef_device"), Values(reply, "ef_host")) << "step " << step;
    EXPECT_EQ(Values(reply, "topk_device"), Values(reply, "topk_host")) << "step " << step;
  }
  EXPECT_EQ(compress::testing::HostBackedPushStream::encoded - encoded, 6);
  EXPECT_EQ(*client_->PushResidual(0, "ef_device"), *client_->PushResidual(0, "ef_host"));
  EXPECT_EQ(*client_->PushResidual(0, "topk_device"), *client_->PushResidual(0, "topk_host"));
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, nullptr);
}

}  // namespace
INSTANTIATE_TEST_SUITE_P(Transports, PsCompressedPushTest,
                         ::testing::ValuesIn(testing::kPsTransports), testing::PsTransportName);

}  // namespace autodist::ps
