// PsStore without gRPC: the synchronous mean, its determinism, sparse and asynchronous updates,
// staleness and step order, optimizer state, and validation.
#include "runtime/ps/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "runtime/optim/optimizer.h"
#include "runtime/optim/optimizer_options.h"
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

constexpr auto kShort = std::chrono::milliseconds(100);

PsStore::Clock::time_point Soon() { return PsStore::Clock::now() + kShort; }

PsInitRequest SgdRequest(std::vector<HostedTensor> tensors, std::map<std::string, Tensor> values,
                         int workers, int replicas) {
  PsInitRequest request;
  request.tensors = std::move(tensors);
  request.optimizer = "sgd";
  request.optimizer_options = {{"lr", "0.01"}};
  request.num_workers = workers;
  request.total_replicas = replicas;
  for (auto& [name, value] : values) request.values.emplace(name, value.Clone());
  return request;
}

PsPush Dense(int worker, int first_replica, int replicas, int64_t step,
             const std::map<std::string, Tensor>& gradients, double lr = 0.01) {
  PsPush push{worker, first_replica, replicas, step, lr, {}};
  for (const auto& [name, gradient] : gradients) {
    push.gradients[name].dense = gradient.Clone();  // the store reuses the storage
  }
  return push;
}

Tensor Value(const PsStore& store, const std::string& name) {
  return *store.Snapshot({name}, false).tensors.at(name).value;
}

int64_t Version(const PsStore& store, const std::string& name) {
  return store.Snapshot({name}, false).tensors.at(name).version;
}

// The gradients of 0.5·|W·x + b − y|² for one sample: r = W·x + b − y, dW = r xᵀ, db = r.
std::map<std::string, Tensor> LinearGradients(const Tensor& w, const Tensor& b,
                                              const std::vector<float>& x,
                                              const std::vector<float>& y) {
  Tensor dw(tensor::DType::kFloat32, {2, 3});
  Tensor db(tensor::DType::kFloat32, {2});
  for (int i = 0; i < 2; ++i) {
    float r = b.data<float>()[i] - y[i];
    for (int j = 0; j < 3; ++j) r += w.data<float>()[i * 3 + j] * x[j];
    db.data<float>()[i] = r;
    for (int j = 0; j < 3; ++j) dw.data<float>()[i * 3 + j] = r * x[j];
  }
  return {{"W", dw}, {"b", db}};
}

TEST(PsStore, SyncMeanOfTwoWorkersIsTheSgdUpdate) {
  // AutoDist's check: y = W·x + b, SGD lr 0.01, two workers with different samples.
  const Tensor w0 = Floats({2, 3}, {0.1F, -0.2F, 0.3F, 0.4F, 0.5F, -0.6F});
  const Tensor b0 = Floats({2}, {0.25F, -0.75F});
  PsStore store;
  store.Init(SgdRequest({{"W"}, {"b"}}, {{"W", w0}, {"b", b0}}, 2, 2));
  const auto g0 = LinearGradients(w0, b0, {1, 2, 3}, {0.5F, 1});
  const auto g1 = LinearGradients(w0, b0, {-1, 0.5F, 2}, {2, -1});

  const auto wait0 = store.Push(Dense(0, 0, 1, 0, g0));
  EXPECT_EQ(wait0.at("b"), 1);
  EXPECT_EQ(Version(store, "b"), 0);  // waiting for worker 1
  store.Push(Dense(1, 1, 1, 0, g1));
  const PsSnapshot b = store.WaitForVersion("b", 1, Soon(), {}, "test");
  EXPECT_EQ(b.version, 1);
  for (int i = 0; i < 2; ++i) {
    const float mean = (g0.at("b").data<float>()[i] + g1.at("b").data<float>()[i]) * 0.5F;
    EXPECT_EQ(b.value->data<float>()[i], SgdStep(b0.data<float>()[i], mean, 0.01)) << i;
  }
  const Tensor w = Value(store, "W");
  for (int i = 0; i < 6; ++i) {
    const float mean = (g0.at("W").data<float>()[i] + g1.at("W").data<float>()[i]) * 0.5F;
    EXPECT_EQ(w.data<float>()[i], SgdStep(w0.data<float>()[i], mean, 0.01)) << i;
  }
}

TEST(PsStore, ArrivalOrderDoesNotChangeTheBits) {
  // Three workers; worker 0 covers replicas 0-1 (uneven). Every arrival order gives one result.
  const Tensor p0 = Random({64}, 1);
  const std::vector<Tensor> g = {Random({64}, 2), Random({64}, 3), Random({64}, 4)};
  const std::vector<std::pair<int, int>> ranges = {{0, 2}, {2, 1}, {3, 1}};
  std::vector<int> order = {0, 1, 2};
  std::vector<Tensor> results;
  do {
    PsStore store;
    store.Init(SgdRequest({{"p"}}, {{"p", p0}}, 3, 4));
    for (const int worker : order) {
      store.Push(Dense(worker, ranges[worker].first, ranges[worker].second, 0, {{"p", g[worker]}}));
    }
    EXPECT_EQ(Version(store, "p"), 1);
    results.push_back(Value(store, "p"));
  } while (std::next_permutation(order.begin(), order.end()));
  for (const Tensor& result : results) EXPECT_TRUE(BitEqual(result, results[0]));
  for (int64_t i = 0; i < 64; ++i) {
    // Summed in replica order, then scaled by 1/4 as the single-process mean does.
    const float sum = (g[0].data<float>()[i] + g[1].data<float>()[i]) + g[2].data<float>()[i];
    EXPECT_EQ(results[0].data<float>()[i], SgdStep(p0.data<float>()[i], sum * 0.25F, 0.01));
  }
}

TEST(PsStore, UnevenReplicasDivideByTheTotal) {
  // Worker 0 pushes the sum of its 2 replicas, worker 1 one replica: mean = (g0 + g1) / 3.
  const Tensor p0 = Random({8}, 5);
  const Tensor g0 = Random({8}, 6);
  const Tensor g1 = Random({8}, 7);
  PsStore store;
  store.Init(SgdRequest({{"p"}}, {{"p", p0}}, 2, 3));
  store.Push(Dense(1, 2, 1, 0, {{"p", g1}}));
  EXPECT_EQ(Version(store, "p"), 0);
  store.Push(Dense(0, 0, 2, 0, {{"p", g0}}));
  const Tensor p = Value(store, "p");
  for (int64_t i = 0; i < 8; ++i) {
    const float sum = g0.data<float>()[i] + g1.data<float>()[i];
    const float mean = sum * (1.0F / 3.0F);
    EXPECT_NEAR(mean, sum / 3.0F, 1e-7F);
    EXPECT_EQ(p.data<float>()[i], SgdStep(p0.data<float>()[i], mean, 0.01)) << i;
  }
}

TEST(PsStore, SparseGradientsEqualTheDenseApplication) {
  // Two workers' row-sparse gradients with an overlapping row, against the same gradients
  // densified, for SGD (row-wise update) and Adam (densified update).
  for (const std::string optimizer : {"sgd", "adam"}) {
    const Tensor table = Random({6, 4}, 8);
    PsInitRequest request = SgdRequest({{"sparse", true, 0, true}, {"dense", true, 0, true}},
                                       {{"sparse", table}, {"dense", table}}, 2, 2);
    request.optimizer = optimizer;
    PsStore store;
    store.Init(std::move(request));
    const auto s0 = Sparse({1, 3}, Random({2, 4}, 9), {6, 4});
    const auto s1 = Sparse({0, 3, 5}, Random({3, 4}, 10), {6, 4});
    for (int step = 0; step < 2; ++step) {
      for (int worker = 0; worker < 2; ++worker) {
        const tensor::SparseGradient& s = worker == 0 ? s0 : s1;
        PsPush push = Dense(worker, worker, 1, step, {{"dense", tensor::Densify(s)}});
        push.gradients["sparse"].sparse =
            tensor::SparseGradient{s.indices.Clone(), s.values.Clone(), {}};
        store.Push(std::move(push));
      }
    }
    EXPECT_EQ(Version(store, "sparse"), 2);
    EXPECT_TRUE(BitEqual(Value(store, "sparse"), Value(store, "dense"))) << optimizer;
    // SGD leaves rows no worker touched alone.
    if (optimizer == "sgd") {
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(Value(store, "sparse").data<float>()[2 * 4 + k], table.data<float>()[2 * 4 + k]);
    }
  }
}

// A worker's copy of `table` at some version, brought up to date by a reply: the rows it carries
// written over the held copy (what the worker's ParameterServerPart does).
Tensor Apply(const Tensor& held, const PsSnapshot& reply) {
  if (!reply.changed) return reply.value->Clone();
  Tensor out = held.Clone();
  const int64_t row = out.numel() / out.dim(0);
  for (int64_t k = 0; k < reply.changed->indices.numel(); ++k) {
    const int64_t r = reply.changed->indices.data<int64_t>()[k];
    std::copy_n(reply.changed->values.data<float>() + k * row, row, out.data<float>() + r * row);
  }
  return out;
}

std::vector<int64_t> Rows(const PsSnapshot& reply) {
  const Tensor& indices = reply.changed->indices;
  return {indices.data<int64_t>(), indices.data<int64_t>() + indices.numel()};
}

PsPush SparsePush(int64_t step, const std::vector<int64_t>& rows, uint64_t seed) {
  PsPush push{0, 0, 1, step, 0.01, {}};
  const tensor::SparseGradient g =
      Sparse(rows, Random({static_cast<int64_t>(rows.size()), 4}, seed), {12, 4});
  push.gradients["table"].sparse = tensor::SparseGradient{g.indices.Clone(), g.values.Clone(), {}};
  return push;
}

TEST(PsStore, RepliesToAHeldVersionCarryOnlyTheRowsChangedSince) {
  const Tensor table = Random({12, 4}, 21);
  PsStore store;
  store.Init(SgdRequest({{"table", true, 0, true}}, {{"table", table}}, 1, 1));
  const uint64_t incarnation = store.incarnation();
  EXPECT_NE(incarnation, 0U);
  const Tensor v0 = Value(store, "table");
  store.Push(SparsePush(0, {1, 4}, 22));
  const Tensor v1 = Value(store, "table");
  store.Push(SparsePush(1, {2, 4}, 23));
  const Tensor v2 = Value(store, "table");

  const auto reply = [&](int64_t held) {
    return store.WaitForVersion("table", 2, Soon(), {}, "test", HeldVersion{incarnation, held});
  };
  // Since version 1: the rows of step 1; since version 0: those of both steps.
  const PsSnapshot since1 = reply(1);
  ASSERT_TRUE(since1.changed.has_value());
  EXPECT_EQ(since1.value, nullptr);
  EXPECT_EQ(since1.version, 2);
  EXPECT_EQ(Rows(since1), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(since1.ReplyBytes(), 2 * (4 * 4 + 8));
  EXPECT_TRUE(BitEqual(Apply(v1, since1), v2));
  const PsSnapshot since0 = reply(0);
  ASSERT_TRUE(since0.changed.has_value());
  EXPECT_EQ(Rows(since0), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_TRUE(BitEqual(Apply(v0, since0), v2));
  // Up to date: no rows at all.
  ASSERT_TRUE(reply(2).changed.has_value());
  EXPECT_EQ(reply(2).changed->indices.numel(), 0);

  // The whole value: another incarnation (a restarted server), a version from the future, no
  // held version.
  EXPECT_FALSE(store.WaitForVersion("table", 2, Soon(), {}, "test", HeldVersion{incarnation + 2, 1})
                   .changed.has_value());
  EXPECT_FALSE(reply(3).changed.has_value());
  const PsSnapshot whole = store.WaitForVersion("table", 2, Soon(), {}, "test");
  EXPECT_FALSE(whole.changed.has_value());
  EXPECT_TRUE(BitEqual(*whole.value, v2));
  EXPECT_EQ(whole.ReplyBytes(), 12 * 4 * 4);

  // So many rows that rows and indices outweigh the value (9 rows x 24 bytes > 192): the value.
  store.Push(SparsePush(2, {0, 1, 3, 5, 6, 7, 8, 9, 10}, 24));
  EXPECT_FALSE(reply(2).changed.has_value());
  // A dense gradient moves every row: nothing held before it can be patched.
  PsPush dense = Dense(0, 0, 1, 3, {{"table", Random({12, 4}, 25)}});
  store.Push(std::move(dense));
  const Tensor v4 = Value(store, "table");
  EXPECT_FALSE(store.WaitForVersion("table", 4, Soon(), {}, "test", HeldVersion{incarnation, 3})
                   .changed.has_value());
  store.Push(SparsePush(4, {11}, 26));
  const PsSnapshot after =
      store.WaitForVersion("table", 5, Soon(), {}, "test", HeldVersion{incarnation, 4});
  ASSERT_TRUE(after.changed.has_value());
  EXPECT_EQ(Rows(after), (std::vector<int64_t>{11}));
  EXPECT_TRUE(BitEqual(Apply(v4, after), Value(store, "table")));
}

TEST(PsStore, ChangedRowsAreTheUnionOfEveryStepAfterTheHeldVersion) {
  // Ten steps of 1-4 rows of a 12-row table: more rows in all than the table has, so the store's
  // log of recent steps drops the oldest and a worker far behind is answered from the per-row
  // versions instead. Either way: the union of the rows pushed after the held version, or the
  // whole value once that union passes 8 rows (8 x (16 + 8) bytes reach the value's 192).
  const std::vector<std::vector<int64_t>> steps = {{1},       {2, 5}, {0, 3, 9}, {5}, {7, 11},
                                                   {1, 2, 3}, {4},    {8, 10},   {6}, {2, 11}};
  PsStore store;
  store.Init(SgdRequest({{"table", true, 0, true}}, {{"table", Random({12, 4}, 40)}}, 1, 1));
  std::vector<Tensor> values = {Value(store, "table")};
  for (size_t t = 0; t < steps.size(); ++t) {
    store.Push(SparsePush(static_cast<int64_t>(t), steps[t], 41 + t));
    values.push_back(Value(store, "table"));
  }
  const auto last = static_cast<int64_t>(steps.size());
  for (int64_t held = 0; held <= last; ++held) {
    std::set<int64_t> expected;
    for (int64_t t = held; t < last; ++t) expected.insert(steps[t].begin(), steps[t].end());
    const PsSnapshot reply = store.WaitForVersion("table", last, Soon(), {}, "test",
                                                  HeldVersion{store.incarnation(), held});
    EXPECT_EQ(reply.version, last);
    if (expected.size() > 8) {
      EXPECT_FALSE(reply.changed.has_value()) << "held " << held;
    } else {
      ASSERT_TRUE(reply.changed.has_value()) << "held " << held;
      EXPECT_EQ(Rows(reply), std::vector<int64_t>(expected.begin(), expected.end()))
          << "held " << held;
    }
    EXPECT_TRUE(BitEqual(Apply(values[static_cast<size_t>(held)], reply), values.back()))
        << "held " << held;
  }
}

TEST(PsStore, OptimizersThatMoveAbsentRowsAlwaysReplyWithTheWholeValue) {
  // Momentum and Adam move rows a gradient lacks (PyTorch's densified update); lazy_sparse Adam
  // and momentum-free SGD do not.
  struct Case {
    std::string name;
    std::map<std::string, std::string> options;
    bool rows_only;
  };
  const std::vector<Case> optimizers = {{"sgd", {{"lr", "0.01"}, {"momentum", "0.9"}}, false},
                                        {"sgd", {{"lr", "0.01"}, {"weight_decay", "0.1"}}, false},
                                        {"adam", {{"lr", "0.01"}}, false},
                                        {"adam", {{"lr", "0.01"}, {"lazy_sparse", "true"}}, true},
                                        {"adagrad", {{"lr", "0.01"}}, true}};
  for (const auto& [name, options, expected] : optimizers) {
    PsInitRequest request =
        SgdRequest({{"table", true, 0, true}}, {{"table", Random({12, 4}, 27)}}, 1, 1);
    request.optimizer = name;
    request.optimizer_options = options;
    PsStore store;
    store.Init(std::move(request));
    const Tensor v0 = Value(store, "table");
    store.Push(SparsePush(0, {3}, 28));
    store.Push(SparsePush(1, {5}, 29));
    const PsSnapshot reply =
        store.WaitForVersion("table", 2, Soon(), {}, "test", HeldVersion{store.incarnation(), 0});
    const bool rows_only =
        optim::SparseUpdatesChangeOnlyPresentRows(optim::ParseOptimizerOptions(name, options));
    EXPECT_EQ(rows_only, expected) << name << " " << options.size();
    EXPECT_EQ(reply.changed.has_value(), expected) << name << " " << options.size();
    // Either way the worker ends with the server's value, bit for bit.
    EXPECT_TRUE(BitEqual(Apply(v0, reply), Value(store, "table"))) << name;
  }
}

TEST(PsStore, AsyncAppliesEachPushOnArrival) {
  const Tensor p0 = Random({5}, 11);
  const Tensor g0 = Random({5}, 12);
  const Tensor g1 = Random({5}, 13);
  PsStore store;
  store.Init(SgdRequest({{"p", false}}, {{"p", p0}}, 2, 3));
  // Worker 1 arrives first and covers replicas 1-2: its own mean is applied at once.
  EXPECT_EQ(store.Push(Dense(1, 1, 2, 0, {{"p", g1}})).at("p"), 1);
  Tensor expected = p0.Clone();
  for (int i = 0; i < 5; ++i) {
    float& e = expected.data<float>()[i];
    e = SgdStep(e, g1.data<float>()[i] * 0.5F, 0.01);
  }
  EXPECT_TRUE(BitEqual(Value(store, "p"), expected));
  EXPECT_EQ(store.Push(Dense(0, 0, 1, 0, {{"p", g0}}, 0.02)).at("p"), 2);
  for (int i = 0; i < 5; ++i) {
    float& e = expected.data<float>()[i];
    e = SgdStep(e, g0.data<float>()[i], 0.02);
  }
  EXPECT_TRUE(BitEqual(Value(store, "p"), expected));
  EXPECT_EQ(store.Stats().updates, 2);
}

TEST(PsStore, StepsApplyInOrderAndStalenessBoundsTheWait) {
  const Tensor p0 = Random({3}, 14);
  PsStore store;
  store.Init(SgdRequest({{"p", true, 1}}, {{"p", p0}}, 2, 2));
  const Tensor g = Random({3}, 15);
  // Worker 0 runs ahead: step 0's reply needs version 0 (staleness 1), step 1's needs version 1.
  EXPECT_EQ(store.Push(Dense(0, 0, 1, 0, {{"p", g}})).at("p"), 0);
  EXPECT_EQ(store.WaitForVersion("p", 0, Soon(), {}, "w0").version, 0);
  EXPECT_EQ(store.Push(Dense(0, 0, 1, 1, {{"p", g}})).at("p"), 1);
  const Error timeout = ErrorOf([&] { store.WaitForVersion("p", 1, Soon(), {}, "worker 0"); });
  EXPECT_EQ(timeout.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(timeout.what(), HasSubstr("worker 0: tensor 'p' did not reach version 1"));
  EXPECT_THAT(timeout.what(),
              HasSubstr("it is at version 0, step 0: replica 1 of 2 has not pushed"));
  // Step 2 is beyond the staleness bound.
  const Error ahead = ErrorOf([&] { store.Push(Dense(0, 0, 1, 2, {{"p", g}})); });
  EXPECT_EQ(ahead.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(ahead.what(), HasSubstr("step 2 is too far ahead"));
  // Worker 1's step 1 completes step 1 first: it waits for step 0.
  store.Push(Dense(1, 1, 1, 1, {{"p", g}}));
  EXPECT_EQ(Version(store, "p"), 0);
  store.Push(Dense(1, 1, 1, 0, {{"p", g}}));
  EXPECT_EQ(Version(store, "p"), 2);
  const Error applied = ErrorOf([&] { store.Push(Dense(1, 1, 1, 1, {{"p", g}})); });
  EXPECT_EQ(applied.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(applied.what(), HasSubstr("tensor 'p' has applied step 1 already"));
}

TEST(PsStore, AWaiterWakesWhenTheLastWorkerPushes) {
  PsStore store;
  store.Init(SgdRequest({{"p"}}, {{"p", Random({3}, 16)}}, 2, 2));
  store.Push(Dense(0, 0, 1, 0, {{"p", Random({3}, 17)}}));
  std::thread slow([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    store.Push(Dense(1, 1, 1, 0, {{"p", Random({3}, 18)}}));
  });
  const auto deadline = PsStore::Clock::now() + std::chrono::seconds(5);
  EXPECT_EQ(store.WaitForVersion("p", 1, deadline, {}, "w0").version, 1);
  slow.join();
}

TEST(PsStore, SnapshotsAreNotChangedByLaterUpdates) {
  PsStore store;
  const Tensor p0 = Random({4}, 19);
  store.Init(SgdRequest({{"p", false}}, {{"p", p0}}, 1, 1));
  const PsSnapshot before = store.Snapshot({}, false).tensors.at("p");
  store.Push(Dense(0, 0, 1, 0, {{"p", Random({4}, 20)}}));
  EXPECT_TRUE(BitEqual(*before.value, p0));
  EXPECT_FALSE(BitEqual(Value(store, "p"), p0));
}

TEST(PsStore, AdamStateResumesBitIdentically) {
  const Tensor p0 = Random({3, 2}, 21);
  std::vector<Tensor> grads;
  for (int s = 0; s < 4; ++s) grads.push_back(Random({3, 2}, 30 + s));
  const auto make = [&](const Tensor& value, int64_t start, std::map<std::string, Tensor> state) {
    PsInitRequest request = SgdRequest({{"w/part_0:0"}}, {{"w/part_0:0", value}}, 1, 1);
    request.optimizer = "adam";
    request.optimizer_options = {{"lr", "0.05"}};
    request.start_step = start;
    request.optimizer_state = std::move(state);
    auto store = std::make_unique<PsStore>();
    store->Init(std::move(request));
    return store;
  };
  const auto run = [&](PsStore& store, int from, int to) {
    for (int s = from; s < to; ++s) store.Push(Dense(0, 0, 1, s, {{"w/part_0:0", grads[s]}}, 0.05));
  };
  auto straight = make(p0, 0, {});
  run(*straight, 0, 4);

  auto first = make(p0, 0, {});
  run(*first, 0, 2);
  const PsPullSnapshot checkpoint = first->Snapshot({"w/part_0:0"}, true);
  EXPECT_THAT(checkpoint.optimizer_state,
              ::testing::ElementsAre(::testing::Key("w/part_0:0/exp_avg"),
                                     ::testing::Key("w/part_0:0/exp_avg_sq"),
                                     ::testing::Key("w/part_0:0/step")));
  EXPECT_EQ(checkpoint.optimizer_state.at("w/part_0:0/step").data<int64_t>()[0], 2);
  auto resumed = make(*checkpoint.tensors.at("w/part_0:0").value, 2, checkpoint.optimizer_state);
  EXPECT_EQ(Version(*resumed, "w/part_0:0"), 2);
  run(*resumed, 2, 4);
  EXPECT_TRUE(BitEqual(Value(*resumed, "w/part_0:0"), Value(*straight, "w/part_0:0")));
}

TEST(PsStore, InitIsValidatedAndSentOnce) {
  const Tensor p = Random({2}, 40);
  const auto error_of = [&](const std::function<void(PsInitRequest&)>& edit) {
    PsInitRequest request = SgdRequest({{"p"}}, {{"p", p}}, 1, 1);
    edit(request);
    PsStore store;
    return ErrorOf([&] { store.Init(std::move(request)); });
  };
  EXPECT_THAT(error_of([](PsInitRequest& r) { r.values.clear(); }).what(),
              HasSubstr("Init: no initial value for tensor 'p'"));
  EXPECT_THAT(error_of([&](PsInitRequest& r) { r.values["q"] = p; }).what(),
              HasSubstr("Init: a value for tensor 'q', which is not in the hosted list"));
  EXPECT_THAT(error_of([](PsInitRequest& r) {
                r.tensors[0] = {"p", false, 2};
              }).what(),
              HasSubstr("Init: tensor 'p' is asynchronous; staleness applies"));
  EXPECT_THAT(error_of([](PsInitRequest& r) { r.tensors.push_back({"p"}); }).what(),
              HasSubstr("Init: tensor 'p' is listed twice"));
  EXPECT_THAT(
      error_of([&](PsInitRequest& r) { r.optimizer_state["q/momentum_buffer"] = p; }).what(),
      HasSubstr("optimizer state 'q/momentum_buffer' belongs to tensor 'q'"));
  EXPECT_THAT(error_of([](PsInitRequest& r) { r.optimizer = "lamb"; }).what(), HasSubstr("lamb"));
  EXPECT_EQ(error_of([](PsInitRequest& r) { r.total_replicas = 0; }).code(),
            ErrorCode::kInvalidArgument);

  PsStore store;
  store.Init(SgdRequest({{"p"}}, {{"p", p}}, 1, 1));
  const Error twice = ErrorOf([&] { store.Init(SgdRequest({{"p"}}, {{"p", p}}, 1, 1)); });
  EXPECT_EQ(twice.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(twice.what(), HasSubstr("already initialized"));
}

TEST(PsStore, BadPushesAreRejectedWholeAndTheStoreKeepsWorking) {
  const Tensor w = Random({4, 2}, 41);
  PsStore store;
  store.Init(SgdRequest({{"w", true, 0, true}, {"d"}}, {{"w", w}, {"d", w}}, 2, 2));
  const Tensor good = Random({4, 2}, 42);
  const auto push_error = [&](PsPush push) {
    return ErrorOf([&] { store.Push(std::move(push)); });
  };

  Error e = push_error(Dense(0, 0, 1, 0, {{"d", good}, {"x", good}}));
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), HasSubstr("worker 0 step 0: this parameter server does not host tensor "
                                  "'x'; it hosts 'd', 'w'"));
  e = push_error(Dense(1, 1, 1, 0, {{"d", Random({2, 4}, 43)}}));
  EXPECT_THAT(e.what(), HasSubstr("worker 1: gradient of 'd' has shape [2, 4], expected [4, 2]"));
  PsPush sparse = Dense(0, 0, 1, 0, {});
  sparse.gradients["w"].sparse = Sparse({1, 4}, Random({2, 2}, 44), {});
  e = push_error(std::move(sparse));
  EXPECT_THAT(e.what(), HasSubstr("sparse gradient of 'w' has row index 4 outside [0, 4)"));
  sparse = Dense(0, 0, 1, 0, {});
  sparse.gradients["w"].sparse = Sparse({2, 1}, Random({2, 2}, 44), {});
  EXPECT_THAT(push_error(std::move(sparse)).what(), HasSubstr("unique ascending row indices"));
  sparse = Dense(0, 0, 1, 0, {});
  sparse.gradients["d"].sparse = Sparse({1}, Random({1, 2}, 45), {});
  EXPECT_THAT(push_error(std::move(sparse)).what(),
              HasSubstr("gradient of 'd' is row-sparse, but the tensor is not declared sparse"));
  EXPECT_THAT(push_error(Dense(0, 1, 2, 0, {{"d", good}})).what(),
              HasSubstr("replicas 1..2 are not within the job's 2 replicas"));
  EXPECT_THAT(push_error(Dense(2, 0, 1, 0, {{"d", good}})).what(),
              HasSubstr("worker 2 step 0: worker rank outside [0, 2)"));
  EXPECT_EQ(store.Stats().pushes, 0);

  // A valid push, then its repetition.
  store.Push(Dense(0, 0, 1, 0, {{"d", good}, {"w", good}}));
  e = push_error(Dense(0, 0, 1, 0, {{"d", good}}));
  EXPECT_EQ(e.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(e.what(), HasSubstr("worker 0 step 0: tensor 'd': replica 0 pushed to this step "
                                  "already"));
  // Nothing of the rejected pushes was recorded: worker 1 completes the step.
  store.Push(Dense(1, 1, 1, 0, {{"d", good}, {"w", good}}));
  EXPECT_EQ(Version(store, "d"), 1);
  EXPECT_EQ(Version(store, "w"), 1);
  const PsStats stats = store.Stats();
  EXPECT_EQ(stats.pushes, 2);
  EXPECT_EQ(stats.steps, 1);
  EXPECT_EQ(stats.version, 1);
  EXPECT_EQ(stats.updates, 2);
}

TEST(PsStore, WaitsEndAtTheDeadlineOrOnShutdown) {
  PsStore store;
  const Error before = ErrorOf([&] { store.WaitInitialized(Soon(), {}); });
  EXPECT_EQ(before.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(before.what(), HasSubstr("has not been initialized after waiting"));
  store.Init(SgdRequest({{"p"}}, {{"p", Random({2}, 46)}}, 2, 2));
  store.WaitInitialized(Soon(), {});
  const Error cancelled = ErrorOf([&] {
    store.WaitForVersion(
        "p", 1, Soon() + std::chrono::seconds(5), [] { return true; }, "w");
  });
  EXPECT_THAT(cancelled.what(), HasSubstr("cancelled"));
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    store.Shutdown();
  });
  const auto start = PsStore::Clock::now();
  const Error shutdown = ErrorOf(
      [&] { store.WaitForVersion("p", 1, start + std::chrono::seconds(5), {}, "worker 0"); });
  stopper.join();
  EXPECT_EQ(shutdown.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(shutdown.what(), HasSubstr("shutting down"));
  EXPECT_LT(PsStore::Clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace autodist::ps
