// The coordinator's tensor transfers over real gRPC: initial values (upload by the chief,
// blocking download with the resume point) and the reduction of replica-local state, plus
// malformed streams sent through the raw stub.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <future>
#include <thread>

#include "runtime/coordinator/client.h"
#include "runtime/coordinator/service.h"
#include "runtime/rpc/grpc_helpers.h"

namespace autodist::coordinator {
namespace {

using autodist::proto::InitialValuesMessage;
using autodist::proto::ReduceMessage;
using autodist::proto::TensorPiece;
using std::chrono::milliseconds;
using tensor::DType;
using tensor::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using TensorMap = std::map<std::string, Tensor>;

constexpr milliseconds kWait{5000};

Error ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorCode::kInternal, "no error");
}

Tensor Floats(tensor::Shape shape, float scale) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i) * scale;
  return t;
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

bool BitEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

class CoordinatorStreamsTest : public ::testing::Test {
 protected:
  // worker-0 (chief), worker-1, ps-0, all registered.
  void SetUp() override {
    CoordinatorOptions options;
    options.max_tensor_bytes = int64_t{8} << 20;
    service_ = std::make_unique<CoordinatorService>(
        strategy::ResourceSpec::FromReplicaCounts({.workers = 2, .parameter_servers = 1}),
        autodist::proto::Strategy(), "job-1", options);
    server_ = std::make_unique<rpc::RpcServer>("127.0.0.1:0",
                                               std::vector<grpc::Service*>{service_.get()});
    client_ = std::make_unique<CoordinatorClient>(server_->endpoint());
    std::vector<std::future<RegisterResult>> results;
    int64_t pid = 100;
    for (const std::string node : {"worker-0", "worker-1", "ps-0"}) {
      MemberInfo self;
      self.node = node;
      self.role = node == "ps-0" ? MemberRole::kParameterServer : MemberRole::kWorker;
      self.pid = ++pid;
      self.endpoint = "10.0.0.1:" + std::to_string(pid);
      results.push_back(std::async(std::launch::async,
                                   [this, self] { return client_->Register(self, "", kWait); }));
    }
    for (auto& result : results) result.get();
  }

  void TearDown() override {
    service_->Shutdown();
    server_.reset();
  }

  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<rpc::RpcServer> server_;
  std::unique_ptr<CoordinatorClient> client_;
};

TEST_F(CoordinatorStreamsTest, InitialValuesRoundTripWithTheResumePointAndALargeTensor) {
  InitialValues upload;
  upload.step = 500;
  upload.epoch = 3;
  upload.batch = 20;
  upload.tensors["w"] = Floats({700, 1000}, 0.25F);  // 2.8 MB: three pieces
  upload.tensors["b"] = Floats({10}, -1.0F);
  upload.tensors["steps"] = Tensor::FromVector<int64_t>({2}, {7, -9});
  upload.tensors["empty"] = Tensor(DType::kFloat32, {0, 4});
  EXPECT_FALSE(client_->Status(kWait).resumed_from_step.has_value());
  client_->PutInitialValues("worker-0", upload);
  // The status reports the resume point too (the operator shows it as resumedFromStep).
  EXPECT_EQ(client_->Status(kWait).resumed_from_step, 500);

  for (const std::string node : {"worker-1", "ps-0", "worker-0"}) {
    const auto got = client_->GetInitialValues(node, kWait);
    EXPECT_EQ(got.step, 500);
    EXPECT_EQ(got.epoch, 3);
    EXPECT_EQ(got.batch, 20);
    ASSERT_EQ(got.tensors.size(), 4U) << node;
    for (const auto& [name, value] : upload.tensors) {
      EXPECT_TRUE(BitEqual(got.tensors.at(name), value)) << node << " tensor " << name;
    }
  }
}

TEST_F(CoordinatorStreamsTest, GetInitialValuesWaitsForTheChiefsUpload) {
  std::atomic<bool> uploaded = false;
  auto download = std::async(std::launch::async, [&] {
    auto values = client_->GetInitialValues("worker-1", kWait);
    EXPECT_TRUE(uploaded.load()) << "the download returned before the upload";
    return values;
  });
  EXPECT_EQ(download.wait_for(milliseconds(150)), std::future_status::timeout);
  uploaded = true;
  client_->PutInitialValues("worker-0", {.step = 4, .tensors = {{"v", Floats({3}, 2)}}});
  const auto values = download.get();
  EXPECT_EQ(values.step, 4);
  EXPECT_THAT(Values(values.tensors.at("v")), ElementsAre(0.0F, 2.0F, 4.0F));
}

TEST_F(CoordinatorStreamsTest, AFreshStartReportsNoResumePoint) {
  client_->PutInitialValues("worker-0", {.tensors = {{"v", Floats({3}, 1)}}});
  EXPECT_FALSE(client_->Status(kWait).resumed_from_step.has_value());
}

TEST_F(CoordinatorStreamsTest, OnlyTheChiefUploadsAndOnlyOnce) {
  const Error timeout = ErrorOf([&] { client_->GetInitialValues("ps-0", milliseconds(100)); });
  EXPECT_EQ(timeout.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(timeout.what(), HasSubstr("GetInitialValues: node 'ps-0': timed out after 0.1 s "
                                        "waiting for the chief 'worker-0' to upload"));

  const Error not_chief = ErrorOf([&] {
    client_->PutInitialValues("worker-1", {.tensors = {{"v", Floats({3}, 1)}}});
  });
  EXPECT_EQ(not_chief.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(not_chief.what(),
              HasSubstr("coordinator (" + server_->endpoint() +
                        "): PutInitialValues: PutInitialValues: node 'worker-1' is not the "
                        "chief; only the chief 'worker-0' uploads the initial values"));
  EXPECT_THAT(ErrorOf([&] { client_->PutInitialValues("ps-0", {}); }).what(),
              HasSubstr("node 'ps-0' is a parameter server"));

  client_->PutInitialValues("worker-0", {.tensors = {{"v", Floats({3}, 1)}}});
  const Error twice = ErrorOf([&] { client_->PutInitialValues("worker-0", {}); });
  EXPECT_EQ(twice.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(twice.what(), HasSubstr("uploaded the initial values already"));
  EXPECT_EQ(client_->GetInitialValues("worker-1", kWait).tensors.size(), 1U);
}

TEST_F(CoordinatorStreamsTest, ReduceStatesMeanAndSumOverUnevenReplicaCounts) {
  // worker-0 runs two replicas, worker-1 one: a mean divides by three.
  auto reduce = [&](const std::string& node, int replicas, const TensorMap& sums) {
    return std::async(std::launch::async, [=, this] {
      return client_->ReduceStates(node, "step-100", replicas, sums, {"count"}, kWait);
    });
  };
  const Tensor big0 = Floats({300, 1000}, 1.0F);  // 1.2 MB: two pieces each way
  const Tensor big1 = Floats({300, 1000}, 2.0F);
  auto worker1 = reduce("worker-1", 1,
                        {{"bn/mean", Tensor::FromVector<float>({3}, {1, 2, 3})},
                         {"count", Tensor::FromVector<float>({1}, {5})},
                         {"big", big1}});
  auto worker0 = reduce("worker-0", 2,
                        {{"bn/mean", Tensor::FromVector<float>({3}, {2, 4, 6})},
                         {"count", Tensor::FromVector<float>({1}, {10})},
                         {"big", big0}});
  const TensorMap result0 = worker0.get();
  const TensorMap result1 = worker1.get();
  EXPECT_THAT(Values(result0.at("bn/mean")), ElementsAre(1.0F, 2.0F, 3.0F));
  EXPECT_THAT(Values(result0.at("count")), ElementsAre(15.0F));
  const Tensor& big = result0.at("big");
  ASSERT_EQ(big.shape(), (tensor::Shape{300, 1000}));
  for (const int64_t i : {int64_t{0}, int64_t{1}, int64_t{299999}}) {
    EXPECT_FLOAT_EQ(big.data<float>()[i], static_cast<float>(i));  // (i + 2i) / 3
  }
  for (const auto& [name, value] : result0) {
    EXPECT_TRUE(BitEqual(result1.at(name), value)) << "workers got different " << name;
  }

  // A round name is single-use; the next round needs its own.
  EXPECT_THAT(
      ErrorOf([&] {
        client_->ReduceStates("worker-0", "step-100", 2, {{"c", Floats({1}, 1)}}, {}, kWait);
      }).what(),
      HasSubstr("round 'step-100', which was reduced already"));
}

TEST_F(CoordinatorStreamsTest, MismatchedShapeFailsTheRoundNamingTheWorkers) {
  auto worker0 = std::async(std::launch::async, [&] {
    return ErrorOf([&] {
      client_->ReduceStates("worker-0", "r", 1, {{"bn/var", Floats({3}, 1)}}, {}, kWait);
    });
  });
  const Error second = ErrorOf([&] {
    client_->ReduceStates("worker-1", "r", 1, {{"bn/var", Floats({4}, 1)}}, {}, kWait);
  });
  const Error first = worker0.get();
  // Whichever came second is rejected; the other learns that the round failed.
  for (const Error* error : {&first, &second}) {
    EXPECT_THAT(error->what(), HasSubstr("sent tensor 'bn/var' with shape"));
    EXPECT_THAT(error->what(), HasSubstr("worker 'worker-0'"));
    EXPECT_THAT(error->what(), HasSubstr("worker 'worker-1'"));
  }
  EXPECT_TRUE(first.code() == ErrorCode::kInvalidArgument ||
              second.code() == ErrorCode::kInvalidArgument);
  EXPECT_THAT(std::string(first.what()) + std::string(second.what()),
              HasSubstr("ReduceStates round 'r' failed"));

  EXPECT_THAT(ErrorOf([&] {
                client_->ReduceStates("ps-0", "s", 1, {{"x", Floats({1}, 1)}}, {}, kWait);
              }).what(),
              HasSubstr("node 'ps-0' is a parameter server; only workers take part"));
  EXPECT_THAT(ErrorOf([&] {
                client_->ReduceStates("worker-0", "s", 1,
                                      {{"x", Tensor::FromVector<int64_t>({1}, {1})}}, {}, kWait);
              }).what(),
              HasSubstr("sent tensor 'x' as int64; only float32 state is reduced"));
}

TEST_F(CoordinatorStreamsTest, DuplicateSubmissionIsRejectedAndTheRoundStillCompletes) {
  struct Outcome {
    std::string error;
    TensorMap result;
  };
  auto submit = [&] {
    return std::async(std::launch::async, [&] {
      Outcome outcome;
      try {
        outcome.result =
            client_->ReduceStates("worker-0", "r", 1, {{"x", Floats({2}, 1)}}, {}, kWait);
      } catch (const Error& error) {
        outcome.error = error.what();
      }
      return outcome;
    });
  };
  // worker-0 submits twice at once: the second to arrive is refused right away, the first
  // waits for worker-1.
  std::future<Outcome> a = submit();
  std::future<Outcome> b = submit();
  std::future<Outcome>* refused = nullptr;
  std::future<Outcome>* waiting = nullptr;
  while (refused == nullptr) {
    if (a.wait_for(milliseconds(5)) == std::future_status::ready) {
      refused = &a;
      waiting = &b;
    } else if (b.wait_for(milliseconds(5)) == std::future_status::ready) {
      refused = &b;
      waiting = &a;
    }
  }
  EXPECT_THAT(refused->get().error,
              HasSubstr("round 'r': worker 'worker-0' submitted this round twice"));
  const TensorMap result =
      client_->ReduceStates("worker-1", "r", 1, {{"x", Floats({2}, 3)}}, {}, kWait);
  EXPECT_THAT(Values(result.at("x")), ElementsAre(0.0F, 2.0F));  // (0+0)/2, (1+3)/2
  const Outcome first = waiting->get();
  EXPECT_EQ(first.error, "");
  EXPECT_THAT(Values(first.result.at("x")), ElementsAre(0.0F, 2.0F));
}

// Raw streams, as a broken or hostile client would send them.
class RawStreamsTest : public CoordinatorStreamsTest {
 protected:
  grpc::Status Upload(const std::vector<InitialValuesMessage>& messages) {
    auto stub = autodist::proto::Coordinator::NewStub(rpc::MakeChannel(server_->endpoint()));
    grpc::ClientContext context;
    autodist::proto::InitialValuesReply reply;
    auto writer = stub->PutInitialValues(&context, &reply);
    for (const auto& message : messages) {
      if (!writer->Write(message)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  static InitialValuesMessage Header(const std::string& node) {
    InitialValuesMessage message;
    message.mutable_header()->set_node(node);
    return message;
  }

  static InitialValuesMessage Piece(const std::string& name, std::vector<int64_t> dims,
                                    int64_t offset, size_t bytes) {
    InitialValuesMessage message;
    TensorPiece& piece = *message.mutable_piece();
    piece.set_name(name);
    piece.set_data_type(static_cast<int32_t>(DType::kFloat32));
    for (const int64_t dim : dims) piece.add_dims(dim);
    piece.set_offset(offset);
    piece.set_data(std::string(bytes, '\0'));
    return message;
  }
};

TEST_F(RawStreamsTest, MalformedUploadsAreRejectedAndTheServerKeepsServing) {
  grpc::Status status = Upload({Piece("w", {2}, 0, 8)});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("the stream must start with a header"));

  status = Upload({Header("worker-0"), Piece("w", {1 << 30}, 0, 0)});  // 4 GiB > 8 MiB
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("tensor 'w' is larger than the limit of 8388608 bytes"));

  status = Upload({Header("worker-0"), Piece("w", {4}, 0, 8), Piece("w", {}, 12, 8)});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("piece at byte offset 12 where 8 was expected"));

  status = Upload({Header("worker-0"), Piece("w", {4}, 0, 8)});  // ends half-way
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("tensor 'w' is incomplete: 8 of 16 bytes"));

  status = Upload({Header("worker-0"), Piece("w", {-3}, 0, 0)});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("negative dimension -3"));

  status = Upload({Header("nobody")});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("node 'nobody' is not a member"));

  // None of that was stored, and a good upload still goes through.
  EXPECT_EQ(ErrorOf([&] { client_->GetInitialValues("worker-1", milliseconds(1)); }).code(),
            ErrorCode::kUnavailable);
  status = Upload({Header("worker-0"), Piece("w", {4}, 0, 8), Piece("w", {}, 8, 8)});
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(client_->GetInitialValues("worker-1", kWait).tensors.at("w").numel(), 4);
}

TEST_F(RawStreamsTest, ReduceStreamWithoutHeaderOrWithOversizedPieceIsRejected) {
  auto stub = autodist::proto::Coordinator::NewStub(rpc::MakeChannel(server_->endpoint()));
  auto send = [&](const std::vector<ReduceMessage>& messages) {
    grpc::ClientContext context;
    auto stream = stub->ReduceStates(&context);
    for (const auto& message : messages) {
      if (!stream->Write(message)) break;
    }
    stream->WritesDone();
    TensorPiece ignored;
    while (stream->Read(&ignored)) {
    }
    return stream->Finish();
  };
  ReduceMessage piece;
  *piece.mutable_piece() = Piece("x", {int64_t{1} << 40}, 0, 0).piece();
  grpc::Status status = send({piece});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("must start with a header"));

  ReduceMessage header;
  header.mutable_header()->set_node("worker-1");
  header.mutable_header()->set_round("r");
  header.mutable_header()->set_replicas(1);
  status = send({header, piece});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("ReduceStates round 'r': worker 'worker-1': tensor 'x' is larger than "
                        "the limit"));

  // The rejected stream submitted nothing: round r still works.
  auto worker1 = std::async(std::launch::async, [&] {
    return client_->ReduceStates("worker-1", "r", 1, {{"x", Floats({1}, 1)}}, {"x"}, kWait);
  });
  client_->ReduceStates("worker-0", "r", 1, {{"x", Floats({1}, 1)}}, {"x"}, kWait);
  EXPECT_THAT(Values(worker1.get().at("x")), ElementsAre(0.0F));
}

}  // namespace
}  // namespace autodist::coordinator
