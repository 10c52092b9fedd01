// The parameter server over gRPC: worker threads with their own clients against a server on
// 127.0.0.1:0 — synchronous SGD, staleness with a slow worker, Adam state through Pull and
// Init, big tensors in pieces, statistics, and bad input that leaves the server serving.
#include "runtime/ps/service.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <memory>
#include <thread>

#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/ps/client.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/tensor/sparse_gradient.h"
#include "tests/ps/test_util.h"

namespace autodist::ps {
namespace {

using tensor::Tensor;
using testing::BitEqual;
using testing::ErrorOf;
using testing::Floats;
using ::testing::HasSubstr;
using testing::Random;
using testing::SgdStep;
using testing::Sparse;

class PsServiceTest : public ::testing::TestWithParam<testing::PsTransport> {
 protected:
  // (Re)starts the server with a fresh service.
  void Start(ParameterServerOptions options = {}) {
    TearDown();
    service_ = std::make_unique<ParameterServerService>(options);
    server_ = std::make_unique<rpc::RpcServer>("127.0.0.1:0",
                                               std::vector<grpc::Service*>{service_.get()});
    testing::ServeTransport(*service_, GetParam());
  }
  void TearDown() override {
    if (service_) service_->Shutdown();
    server_.reset();
  }
  std::unique_ptr<PsClient> Client() {
    return std::make_unique<PsClient>("ps-0", server_->endpoint());
  }
  std::string What(const std::string& call) const {
    return "parameter server ps-0 (" + server_->endpoint() + "): " + call;
  }

  std::unique_ptr<ParameterServerService> service_;
  std::unique_ptr<rpc::RpcServer> server_;
};

PsInitRequest Request(std::vector<HostedTensor> tensors,
                      const std::map<std::string, Tensor>& values, int workers, int replicas,
                      std::string optimizer = "sgd") {
  PsInitRequest request;
  request.tensors = std::move(tensors);
  request.optimizer = std::move(optimizer);
  request.optimizer_options = {{"lr", "0.01"}};
  request.num_workers = workers;
  request.total_replicas = replicas;
  request.values = values;
  return request;
}

PsStepRequest StepOf(int worker, int64_t step, const std::map<std::string, const Tensor*>& grads,
                     double lr = 0.01) {
  PsStepRequest request;
  request.worker = worker;
  request.first_replica = worker;
  request.step = step;
  request.learning_rate = lr;
  for (const auto& [name, grad] : grads) request.gradients[name].dense = grad;
  return request;
}

TEST_P(PsServiceTest, TwoWorkersSynchronousSgdAndStats) {
  // y = W·x + b with SGD lr 0.01: after one synchronous step b = b0 − 0.01 · mean(g0, g1).
  Start();
  const Tensor w0 = Random({2, 3}, 1);
  const Tensor b0 = Floats({2}, {0.25F, -0.75F});
  Client()->Init(Request({{"W"}, {"b"}}, {{"W", w0}, {"b", b0}}, 2, 2));
  const std::vector<Tensor> gw = {Random({2, 3}, 2), Random({2, 3}, 3)};
  const std::vector<Tensor> gb = {Floats({2}, {0.5F, -1.5F}), Floats({2}, {2.25F, 0.125F})};

  std::vector<std::future<PsValues>> replies;
  for (int worker = 0; worker < 2; ++worker) {
    replies.push_back(std::async(std::launch::async, [&, worker] {
      return Client()->Step(StepOf(worker, 0, {{"W", &gw[worker]}, {"b", &gb[worker]}}));
    }));
  }
  for (auto& reply : replies) {
    const PsValues values = reply.get();
    EXPECT_EQ(values.versions.at("W"), 1);
    EXPECT_EQ(values.versions.at("b"), 1);
    for (int i = 0; i < 2; ++i) {
      const float mean = (gb[0].data<float>()[i] + gb[1].data<float>()[i]) * 0.5F;
      EXPECT_EQ(values.values.at("b").data<float>()[i], SgdStep(b0.data<float>()[i], mean, 0.01));
    }
    for (int i = 0; i < 6; ++i) {
      const float mean = (gw[0].data<float>()[i] + gw[1].data<float>()[i]) * 0.5F;
      EXPECT_EQ(values.values.at("W").data<float>()[i], SgdStep(w0.data<float>()[i], mean, 0.01));
    }
  }
  const PsStats stats = Client()->Stats();
  EXPECT_EQ(stats.bytes_pushed, 2 * (24 + 8));
  EXPECT_EQ(stats.bytes_pushed_decoded, stats.bytes_pushed);  // uncompressed: as sent
  EXPECT_EQ(stats.bytes_pulled, 2 * (24 + 8));
  EXPECT_EQ(stats.version, 1);
  EXPECT_EQ(stats.steps, 1);
  EXPECT_EQ(stats.updates, 2);
  EXPECT_EQ(stats.pushes, 2);
  EXPECT_EQ(service_->CurrentStats().bytes_pushed, stats.bytes_pushed);
}

TEST_P(PsServiceTest, PushOrderDoesNotChangeTheBits) {
  const Tensor p0 = Random({1000}, 4);
  const std::vector<Tensor> grads = {Random({1000}, 5), Random({1000}, 6), Random({1000}, 7)};
  std::vector<Tensor> results;
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2}, std::vector<int>{2, 1, 0}}) {
    Start();
    Client()->Init(Request({{"p"}}, {{"p", p0}}, 3, 3));
    std::vector<std::future<PsValues>> replies;
    for (const int worker : order) {
      replies.push_back(std::async(std::launch::async, [&, worker] {
        return Client()->Step(StepOf(worker, 0, {{"p", &grads[worker]}}));
      }));
      // Let this push arrive before the next one starts.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (auto& reply : replies) results.push_back(reply.get().values.at("p"));
    TearDown();
  }
  for (const Tensor& result : results) EXPECT_TRUE(BitEqual(result, results[0]));
}

TEST_P(PsServiceTest, StalenessOneLetsAFastWorkerRunOneStepAhead) {
  // The reply to step t needs version t + 1 - staleness = t: every step before t applied. The
  // fast worker gets step t's reply while the slow one has not pushed step t, but step t + 1's
  // only once the slow worker has pushed step t.
  Start();
  const Tensor p0 = Random({16}, 8);
  Client()->Init(Request({{"p", true, 1}}, {{"p", p0}}, 2, 2));
  const Tensor g = Random({16}, 9);
  std::atomic<int> slow_pushed{0};  // steps the slow worker has started to push
  std::promise<void> fast_done_step0;
  std::promise<void> fast_done_step1;
  std::thread slow([&] {
    auto client = Client();
    fast_done_step0.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    slow_pushed = 1;
    client->Step(StepOf(1, 0, {{"p", &g}}));
    fast_done_step1.get_future().wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    slow_pushed = 2;
    client->Step(StepOf(1, 1, {{"p", &g}}));
  });
  auto fast = Client();
  const PsValues step0 = fast->Step(StepOf(0, 0, {{"p", &g}}));
  EXPECT_EQ(slow_pushed.load(), 0);
  EXPECT_EQ(step0.versions.at("p"), 0);
  EXPECT_TRUE(BitEqual(step0.values.at("p"), p0));
  fast_done_step0.set_value();
  const PsValues step1 = fast->Step(StepOf(0, 1, {{"p", &g}}));
  EXPECT_EQ(slow_pushed.load(), 1);  // waited for the slow worker's step 0
  EXPECT_EQ(step1.versions.at("p"), 1);
  fast_done_step1.set_value();
  const PsValues step2 = fast->Step(StepOf(0, 2, {{"p", &g}}));
  EXPECT_EQ(slow_pushed.load(), 2);  // waited for the slow worker's step 1
  EXPECT_EQ(step2.versions.at("p"), 2);
  slow.join();
}

TEST_P(PsServiceTest, StalenessZeroWaitsForTheSlowWorkerEveryStep) {
  Start();
  Client()->Init(Request({{"p"}}, {{"p", Random({16}, 8)}}, 2, 2));
  const Tensor g = Random({16}, 9);
  std::atomic<int> slow_pushed{0};
  std::thread slow([&] {
    auto client = Client();
    for (int step = 0; step < 2; ++step) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      slow_pushed = step + 1;
      client->Step(StepOf(1, step, {{"p", &g}}));
    }
  });
  auto fast = Client();
  for (int step = 0; step < 2; ++step) {
    const PsValues reply = fast->Step(StepOf(0, step, {{"p", &g}}));
    EXPECT_EQ(slow_pushed.load(), step + 1);
    EXPECT_EQ(reply.versions.at("p"), step + 1);  // exactly the values after step `step`
  }
  slow.join();
}

TEST_P(PsServiceTest, UnevenReplicasSparseAndAsyncInOnePush) {
  // Worker 0 hosts replicas 0-1, worker 1 replica 2. "emb" is sparse (rows overlap), "b" is
  // asynchronous and updated by every push on arrival.
  Start();
  const Tensor emb0 = Random({5, 3}, 10);
  const Tensor b0 = Random({3}, 11);
  Client()->Init(Request({{"emb", true, 0, true}, {"b", false}}, {{"emb", emb0}, {"b", b0}}, 2, 3));
  const auto s0 = Sparse({0, 2}, Random({2, 3}, 12), {5, 3});
  const auto s1 = Sparse({2, 4}, Random({2, 3}, 13), {5, 3});
  const Tensor gb = Random({3}, 14);

  PsStepRequest first;
  first.worker = 0;
  first.first_replica = 0;
  first.replicas = 2;
  first.learning_rate = 0.01;
  first.gradients["emb"].sparse = &s0;
  first.gradients["b"].dense = &gb;
  auto pending = std::async(std::launch::async, [&] { return Client()->Step(first); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  PsStepRequest second = first;
  second.worker = 1;
  second.first_replica = 2;
  second.replicas = 1;
  second.gradients["emb"].sparse = &s1;
  const PsValues reply = Client()->Step(second);
  const PsValues reply0 = pending.get();

  // emb: rows merged, mean over 3 replicas, applied row-wise.
  Tensor emb = emb0.Clone();
  const Tensor sum = tensor::Densify(tensor::MergeSparse({s0, s1}));
  for (int64_t i = 0; i < emb.numel(); ++i) {
    const float g = sum.data<float>()[i];
    if (g != 0) emb.data<float>()[i] = SgdStep(emb.data<float>()[i], g * (1.0F / 3.0F), 0.01);
  }
  EXPECT_TRUE(BitEqual(reply.values.at("emb"), emb));
  EXPECT_TRUE(BitEqual(reply0.values.at("emb"), emb));
  // b: worker 0's push applied its own mean (sum of 2 replicas / 2) at once, worker 1's next.
  Tensor b = b0.Clone();
  for (int i = 0; i < 3; ++i)
    b.data<float>()[i] = SgdStep(b.data<float>()[i], gb.data<float>()[i] * 0.5F, 0.01);
  EXPECT_EQ(reply0.versions.at("b"), 1);
  for (int i = 0; i < 3; ++i)
    b.data<float>()[i] = SgdStep(b.data<float>()[i], gb.data<float>()[i], 0.01);
  EXPECT_EQ(reply.versions.at("b"), 2);
  EXPECT_TRUE(BitEqual(reply.values.at("b"), b));
  EXPECT_EQ(Client()->Stats().bytes_pushed, 2 * (2 * 12 + 2 * 8 + 12));
}

TEST_P(PsServiceTest, AWorkerHoldingAVersionPullsOnlyTheChangedRows) {
  // A [64, 8] table: one step changes rows 3 and 40; a worker that holds version 0 gets them
  // alone, as rows, and patching its copy gives the server's value bit for bit.
  Start();
  const Tensor table = Random({64, 8}, 30);
  Client()->Init(
      Request({{"emb", true, 0, true}, {"b"}}, {{"emb", table}, {"b", Random({3}, 31)}}, 1, 1));
  const PsValues first = Client()->Pull({}, false);
  ASSERT_NE(first.incarnation, 0U);
  EXPECT_EQ(first.versions.at("emb"), 0);

  const auto g = Sparse({3, 40}, Random({2, 8}, 32), {64, 8});
  const Tensor gb = Random({3}, 33);
  PsStepRequest step = StepOf(0, 0, {{"b", &gb}});
  step.gradients["emb"].sparse = &g;
  step.held["emb"] = HeldVersion{first.incarnation, 0};
  step.held["b"] = HeldVersion{first.incarnation, 0};  // dense: whole values all the same
  const PsValues reply = Client()->Step(step);
  EXPECT_EQ(reply.incarnation, first.incarnation);
  EXPECT_EQ(reply.versions.at("emb"), 1);
  ASSERT_TRUE(reply.changed_rows.contains("emb"));
  EXPECT_FALSE(reply.values.contains("emb"));
  EXPECT_TRUE(reply.values.contains("b"));
  const tensor::SparseGradient& rows = reply.changed_rows.at("emb");
  ASSERT_EQ(rows.indices.numel(), 2);
  EXPECT_EQ(rows.indices.data<int64_t>()[0], 3);
  EXPECT_EQ(rows.indices.data<int64_t>()[1], 40);
  Tensor patched = first.values.at("emb").Clone();
  for (int64_t k = 0; k < 2; ++k) {
    std::copy_n(rows.values.data<float>() + k * 8, 8,
                patched.data<float>() + rows.indices.data<int64_t>()[k] * 8);
  }
  EXPECT_TRUE(BitEqual(patched, Client()->Pull({"emb"}, false).values.at("emb")));
  // Pulled: the two rows with their indices and the dense bias (no longer the whole table), then
  // the Pulls' whole values.
  EXPECT_EQ(service_->CurrentStats().bytes_pulled,
            (64 * 8 * 4 + 12) + (2 * (8 * 4 + 8) + 12) + 64 * 8 * 4);

  // Held by a server of another incarnation: the whole value.
  PsStepRequest stranger = StepOf(0, 1, {});
  stranger.gradients["emb"].sparse = &g;
  stranger.held["emb"] = HeldVersion{first.incarnation + 2, 1};
  const PsValues whole = Client()->Step(stranger);
  EXPECT_TRUE(whole.values.contains("emb"));
  EXPECT_FALSE(whole.changed_rows.contains("emb"));
}

TEST_P(PsServiceTest, AdamStateThroughPullAndInitResumesExactly) {
  const Tensor p0 = Random({4, 2}, 15);
  std::vector<Tensor> grads;
  for (int s = 0; s < 4; ++s) grads.push_back(Random({4, 2}, 20 + s));
  const auto train = [&](PsClient& client, int from, int to) {
    PsValues last;
    for (int s = from; s < to; ++s) last = client.Step(StepOf(0, s, {{"w", &grads[s]}}, 0.05));
    return last;
  };
  Start();
  Client()->Init(Request({{"w"}}, {{"w", p0}}, 1, 1, "adam"));
  const Tensor straight = train(*Client(), 0, 4).values.at("w");
  TearDown();

  Start();
  Client()->Init(Request({{"w"}}, {{"w", p0}}, 1, 1, "adam"));
  train(*Client(), 0, 2);
  const PsValues checkpoint = Client()->Pull({}, true);
  EXPECT_EQ(checkpoint.versions.at("w"), 2);
  EXPECT_THAT(checkpoint.values,
              ::testing::ElementsAre(::testing::Key("w"), ::testing::Key("w/exp_avg"),
                                     ::testing::Key("w/exp_avg_sq"), ::testing::Key("w/step")));
  EXPECT_EQ(checkpoint.values.at("w/step").data<int64_t>()[0], 2);
  TearDown();

  Start();
  PsInitRequest resume = Request({{"w"}}, {{"w", checkpoint.values.at("w")}}, 1, 1, "adam");
  resume.start_step = 2;
  for (const auto& [key, value] : checkpoint.values) {
    if (key != "w") resume.optimizer_state.emplace(key, value);
  }
  Client()->Init(resume);
  EXPECT_TRUE(BitEqual(train(*Client(), 2, 4).values.at("w"), straight));
}

// Save writes the same snapshot Pull returns, as a checkpoint file; an unwritable path is the
// caller's error, naming it, and the server keeps serving.
TEST_P(PsServiceTest, SaveWritesTheSnapshotAsACheckpointFile) {
  Start();
  const Tensor p0 = Random({4, 2}, 16);
  Client()->Init(Request({{"w"}, {"v"}}, {{"w", p0}, {"v", Random({3}, 17)}}, 1, 1, "adam"));
  const Tensor g = Random({4, 2}, 18);
  const Tensor h = Random({3}, 19);
  Client()->Step(StepOf(0, 0, {{"w", &g}, {"v", &h}}, 0.05));
  const std::string path = ::testing::TempDir() + "/ps_save_" + NameOf(GetParam()) + ".ckpt";
  const autodist::proto::SaveReply reply = Client()->Save(path);
  EXPECT_EQ(reply.values_size(), 2);
  EXPECT_EQ(reply.optimizer_state_size(), 6);  // exp_avg, exp_avg_sq, step for each
  EXPECT_EQ(static_cast<uint64_t>(reply.bytes()), std::filesystem::file_size(path));

  const PsValues pulled = Client()->Pull({}, true);
  const checkpoint::CheckpointReader file(path);
  ASSERT_EQ(file.variables().size(), 2U);
  ASSERT_EQ(file.optimizer().size(), 6U);
  for (const auto& [name, value] : pulled.values) {
    const auto* entry = file.Find(name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_TRUE(BitEqual(file.Read(*entry), value)) << name;
  }
  std::filesystem::remove(path);

  const std::string unwritable = ::testing::TempDir() + "/no/such/dir/x.ckpt";
  const Error error = ErrorOf([&] { Client()->Save(unwritable); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(What("Save")));
  EXPECT_THAT(error.what(), HasSubstr(unwritable));
  EXPECT_NO_THROW(Client()->Step(StepOf(0, 1, {{"w", &g}, {"v", &h}}, 0.05)));
}

TEST_P(PsServiceTest, SixteenMiBTensorRoundTripsInPieces) {
  Start();
  Tensor big(tensor::DType::kFloat32, {4, 1 << 20});  // 16 MiB
  for (int64_t i = 0; i < big.numel(); ++i) big.data<float>()[i] = static_cast<float>(i) * 0.25F;
  Client()->Init(Request({{"big", false}}, {{"big", big}}, 1, 1));
  const PsValues pulled = Client()->Pull({"big"}, false);
  EXPECT_TRUE(BitEqual(pulled.values.at("big"), big));
  const Tensor zero = Tensor::Zeros(tensor::DType::kFloat32, {4, 1 << 20});
  const PsValues stepped = Client()->Step(StepOf(0, 0, {{"big", &zero}}));
  EXPECT_TRUE(BitEqual(stepped.values.at("big"), big));  // SGD with a zero gradient
  const PsStats stats = Client()->Stats();
  EXPECT_EQ(stats.bytes_pushed, int64_t{16} << 20);
  EXPECT_EQ(stats.bytes_pulled, int64_t{32} << 20);
}

TEST_P(PsServiceTest, StepBeforeInitWaitsThenFailsAfterTheDeadline) {
  ParameterServerOptions options;
  options.wait_deadline = std::chrono::milliseconds(300);
  Start(options);
  const Tensor g = Random({2}, 31);
  const Error early = ErrorOf([&] { Client()->Step(StepOf(0, 0, {{"p", &g}})); });
  EXPECT_EQ(early.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(early.what(), HasSubstr(What("Step") + ": the parameter server has not been "
                                                     "initialized after waiting"));
  EXPECT_EQ(ErrorOf([&] { Client()->Pull({}, false); }).code(), ErrorCode::kFailedPrecondition);

  // A worker that races the chief's Init is served once Init arrives.
  auto racing = std::async(std::launch::async, [&] { return Client()->Pull({"p"}, false); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Client()->Init(Request({{"p"}}, {{"p", Random({2}, 32)}}, 1, 1));
  EXPECT_EQ(racing.get().versions.at("p"), 0);
  // A Step whose peer never pushes fails at the deadline, naming what is missing.
  Start(options);
  Client()->Init(Request({{"p"}}, {{"p", Random({2}, 32)}}, 2, 2));
  const Error stuck = ErrorOf([&] { Client()->Step(StepOf(0, 0, {{"p", &g}})); });
  EXPECT_EQ(stuck.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(stuck.what(), HasSubstr("worker 0 step 0: tensor 'p' did not reach version 1"));
  EXPECT_THAT(stuck.what(), HasSubstr("replica 1 of 2 has not pushed"));
}

TEST_P(PsServiceTest, ShutdownWakesAWaitingStep) {
  Start();
  Client()->Init(Request({{"p"}}, {{"p", Random({2}, 33)}}, 2, 2));
  const Tensor g = Random({2}, 34);
  auto waiting = std::async(std::launch::async, [&] {
    return ErrorOf([&] { Client()->Step(StepOf(0, 0, {{"p", &g}})); });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  service_->Shutdown();
  const Error error = waiting.get();
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("shutting down"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST_P(PsServiceTest, BadRequestsFailAndTheServerKeepsServing) {
  Start();
  const Tensor p0 = Random({4, 2}, 35);
  Client()->Init(Request({{"p", true, 0, true}}, {{"p", p0}}, 1, 1));
  const Error twice = ErrorOf([&] { Client()->Init(Request({{"p"}}, {{"p", p0}}, 1, 1)); });
  EXPECT_EQ(twice.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(twice.what(), HasSubstr(What("Init") + ": Init: the parameter server is already"));

  const Tensor wrong = Random({2, 4}, 36);
  Error e = ErrorOf([&] { Client()->Step(StepOf(0, 0, {{"q", &wrong}})); });
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), HasSubstr(What("Step") + ": worker 0: this parameter server does not "
                                                 "host tensor 'q'; it hosts 'p'"));
  e = ErrorOf([&] { Client()->Step(StepOf(0, 0, {{"p", &wrong}})); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("worker 0: gradient of 'p' has shape [2, 4], expected [4, 2]"));
  const auto out_of_range = Sparse({1, 7}, Random({2, 2}, 37), {4, 2});
  PsStepRequest sparse = StepOf(0, 0, {});
  sparse.gradients["p"].sparse = &out_of_range;
  e = ErrorOf([&] { Client()->Step(sparse); });
  EXPECT_THAT(e.what(), HasSubstr("sparse gradient of 'p' has row index 7 outside [0, 4)"));
  sparse.gradients["p"].dense = &wrong;
  EXPECT_THAT(ErrorOf([&] { Client()->Step(sparse); }).what(),
              HasSubstr("gradient 'p' must set exactly one of dense and sparse"));
  EXPECT_EQ(ErrorOf([&] { Client()->Pull({"q"}, false); }).code(), ErrorCode::kNotFound);
  // A held version below 0 names the tensor and the version.
  const auto rows = Sparse({1}, Random({1, 2}, 38), {4, 2});
  PsStepRequest held = StepOf(0, 0, {});
  held.gradients["p"].sparse = &rows;
  held.held["p"] = HeldVersion{Client()->Pull({}, false).incarnation, -3};
  e = ErrorOf([&] { Client()->Step(held); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("worker 0 step 0: the header says it holds version -3 of 'p'; "
                                  "versions are >= 0"));

  // Malformed streams, straight from a stub.
  auto stub = autodist::proto::ParameterServer::NewStub(rpc::MakeChannel(server_->endpoint()));
  const auto raw_step = [&](const std::vector<autodist::proto::StepMessage>& messages) {
    grpc::ClientContext context;
    auto stream = stub->Step(&context);
    for (const auto& message : messages) stream->Write(message);
    stream->WritesDone();
    autodist::proto::StepReply reply;
    while (stream->Read(&reply)) {
    }
    return stream->Finish();
  };
  autodist::proto::StepMessage header;
  header.mutable_header()->set_worker(0);
  autodist::proto::StepMessage piece;
  piece.mutable_gradient()->set_name("p");
  piece.mutable_gradient()->set_data_type(1);
  piece.mutable_gradient()->add_dims(4);
  piece.mutable_gradient()->add_dims(2);
  piece.mutable_gradient()->set_data(std::string(16, '\0'));
  autodist::proto::StepMessage gap = piece;
  gap.mutable_gradient()->clear_dims();
  gap.mutable_gradient()->clear_data_type();
  gap.mutable_gradient()->set_offset(24);  // 16 bytes arrived, not 24
  grpc::Status status = raw_step({piece});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("the first message must be the header"));
  status = raw_step({header, piece, gap});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("piece at byte offset 24 where 16 was expected"));
  status = raw_step({header, piece});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("tensor 'p' is incomplete: 16 of 32 bytes"));

  // A tensor announcing more than max_tensor_bytes is refused before it is allocated.
  ParameterServerOptions small;
  small.max_tensor_bytes = 1 << 20;
  ParameterServerService limited(small);
  rpc::RpcServer limited_server("127.0.0.1:0", {&limited});
  testing::ServeTransport(limited, GetParam());
  const Error huge = ErrorOf([&] {
    PsClient("ps-1", limited_server.endpoint())
        .Init(Request({{"p"}}, {{"p", Random({512, 513}, 38)}}, 1, 1));
  });
  EXPECT_EQ(huge.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(huge.what(), HasSubstr("Init: tensor 'p' (1050624 bytes) is larger than the limit "
                                     "of 1048576 bytes"));

  // Still serving: a valid step.
  const Tensor g = Random({4, 2}, 39);
  EXPECT_EQ(Client()->Step(StepOf(0, 0, {{"p", &g}})).versions.at("p"), 1);
  EXPECT_EQ(Client()->Stats().pushes, 1);
}

}  // namespace
// A port nothing listens on (yet): bound to 127.0.0.1:0, then released.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

TEST(PsClientTest, TheFirstCallWaitsForTheServerAndOnceReachedCallsFailFast) {
  const std::string endpoint = "127.0.0.1:" + std::to_string(FreePort());
  PsClient client("ps-0", endpoint, {}, std::chrono::seconds(60));
  // Not up yet (on a cluster: its name does not resolve yet); it comes a second later.
  ParameterServerService service;
  std::unique_ptr<rpc::RpcServer> server;
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    server = std::make_unique<rpc::RpcServer>(endpoint, std::vector<grpc::Service*>{&service});
  });
  const auto start = std::chrono::steady_clock::now();
  client.Init(Request({{"b"}}, {{"b", Floats({2}, {1.0F, 2.0F})}}, 1, 1));
  later.join();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(900));
  EXPECT_EQ(client.Pull({"b"}, false).versions.at("b"), 0);
  // Reached once: a server that goes away fails the next call at once, not at its deadline.
  service.Shutdown();
  server.reset();
  const auto gone = std::chrono::steady_clock::now();
  EXPECT_THROW(client.Pull({"b"}, false), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - gone, std::chrono::seconds(20));
}

INSTANTIATE_TEST_SUITE_P(Transports, PsServiceTest, ::testing::ValuesIn(testing::kPsTransports),
                         testing::PsTransportName);

}  // namespace autodist::ps
