// The all-reduce on the replicas' devices (one rank per replica, the optimizer where the replicas
// are), run on CPU tensors over Gloo against the host path (AllReducePart: a worker's replicas
// summed first, one rank per worker). Two workers of one replica each reduce the same two
// gradients either way, so the variables and optimizer slots must match bit for bit, overlapped
// or not; with two replicas each the sums are added in another order, so they match within float
// tolerance, and every replica of the job holds the same bits. On a GPU the same part runs over
// NCCL (tests/gpu/worker_job_test.cc).
#include "runtime/sync/device_all_reduce_part.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/collective/registry.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"
#include "runtime/observe/timeline.h"
#include "runtime/optim/optimizer_options.h"
#include "runtime/strategy/compiler.h"
#include "runtime/sync/allreduce_part.h"

namespace autodist::sync {
namespace {

using tensor::Tensor;
using ::testing::HasSubstr;

const std::string kModel = std::string(AUTODIST_FIXTURES_DIR) + "/parity/mlp/model.onnx";
// An embedding table (row-sparse gradients) under a dense classifier.
const std::string kEmbeddingModel =
    std::string(AUTODIST_FIXTURES_DIR) + "/parity/embedding/model.onnx";

struct Job {
  std::string model = kModel;
  int workers = 2;
  int replicas_per_worker = 1;
  strategy::BuilderOptions options;
  std::string builder = "AllReduce";
  int total() const { return workers * replicas_per_worker; }
};

StrategyPlan PlanOf(const Job& job) {
  const auto variables = graph::GraphItem::Load(job.model).TrainableVariables();
  const auto resources = strategy::ResourceSpec::FromReplicaCounts(
      {job.workers, 0, job.replicas_per_worker, 0, std::nullopt});
  strategy::CompileRequest request;
  request.builder = job.builder;
  request.options = job.options;
  return PlanStrategy(strategy::Compile(variables, resources, request).strategy, variables,
                      resources);
}

// A worker's replicas: sessions of the parity MLP, all starting from its initializers.
struct Worker {
  std::vector<exec::Session> sessions;
  std::vector<exec::Session*> pointers;
};

std::vector<Worker> MakeWorkers(const Job& job) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFileBytes(job.model, "model")));
  std::vector<Worker> workers(static_cast<size_t>(job.workers));
  for (Worker& worker : workers) {
    for (int r = 0; r < job.replicas_per_worker; ++r) {
      worker.sessions.emplace_back(model, job.model, exec::SessionOptions{});
    }
    for (exec::Session& session : worker.sessions) worker.pointers.push_back(&session);
  }
  return workers;
}

// Gloo communicators of `size` ranks, connected at once (each waits for the others).
std::vector<std::unique_ptr<collective::Communicator>> Connect(int size, const std::string& name) {
  auto store = std::make_shared<collective::MemoryRendezvousStore>();
  std::vector<std::future<std::unique_ptr<collective::Communicator>>> joining;
  for (int rank = 0; rank < size; ++rank) {
    collective::CommunicatorOptions options;
    options.rank = rank;
    options.size = size;
    options.rendezvous = store;
    options.prefix = name;
    options.connect_timeout = std::chrono::seconds(30);
    options.timeout = std::chrono::seconds(30);
    joining.push_back(std::async(
        std::launch::async, [options] { return collective::MakeCommunicator("gloo", options); }));
  }
  std::vector<std::unique_ptr<collective::Communicator>> out;
  for (auto& future : joining) out.push_back(future.get());
  return out;
}

// Closes every rank at once: each one's close waits for the others' (a barrier).
void CloseAll(std::vector<std::unique_ptr<collective::Communicator>>& communicators) {
  std::vector<std::thread> closing;
  for (auto& communicator : communicators) {
    closing.emplace_back([&communicator] { communicator.reset(); });
  }
  for (std::thread& thread : closing) thread.join();
}

// Step `step`'s gradient of every variable for global replica `replica`: seeded noise, the same
// on both paths; a row-sparse variable's has a few distinct rows, ascending, as Gather's gradient
// has them (replicas share some). `skip` has no gradient that step.
using Gradients = std::vector<std::map<std::string, exec::Gradient>>;
Gradients StepGradients(const StrategyPlan& plan, int first_replica, int replicas, int64_t step,
                        const std::string& skip) {
  Gradients out(static_cast<size_t>(replicas));
  for (int r = 0; r < replicas; ++r) {
    std::mt19937 rng(static_cast<uint32_t>(1000 * step + first_replica + r));
    std::normal_distribution<float> noise(0.0F, 1.0F);
    for (const VariablePlan& variable : plan.variables) {
      if (variable.name == skip) continue;
      if (variable.sparse) {
        std::set<int64_t> rows;
        std::uniform_int_distribution<int64_t> row(0, std::min<int64_t>(variable.shape[0], 12) - 1);
        while (rows.size() < 5) rows.insert(row(rng));
        tensor::Shape shape = variable.shape;
        shape[0] = static_cast<int64_t>(rows.size());
        tensor::SparseGradient sparse;
        sparse.dense_shape = variable.shape;
        sparse.indices = Tensor(tensor::DType::kInt64, {shape[0]});
        sparse.values = Tensor(tensor::DType::kFloat32, shape);
        int64_t i = 0;
        for (const int64_t index : rows) sparse.indices.data<int64_t>()[i++] = index;
        for (int64_t j = 0; j < sparse.values.numel(); ++j) {
          sparse.values.data<float>()[j] = noise(rng);
        }
        exec::Gradient gradient;
        gradient.sparse = std::move(sparse);
        out[static_cast<size_t>(r)].emplace(variable.name, std::move(gradient));
        continue;
      }
      Tensor dense(tensor::DType::kFloat32, variable.shape);
      for (int64_t i = 0; i < dense.numel(); ++i) dense.data<float>()[i] = noise(rng);
      exec::Gradient gradient;
      gradient.dense = std::move(dense);
      out[static_cast<size_t>(r)].emplace(variable.name, std::move(gradient));
    }
  }
  return out;
}

// Trains `steps` steps on every worker at once, a thread each, through `part(w)`. Steps in
// `overlapped` hand the last replica's gradients out first (in reverse model order, as backward
// finishes them). The variable named `skip` has no gradient in step 1.
void Train(const Job& job, const StrategyPlan& plan, std::vector<Worker>& workers,
           const std::function<AllReducer&(int worker)>& part, int steps,
           const std::set<int64_t>& overlapped, const std::string& skip = "") {
  std::vector<std::thread> threads;
  std::vector<std::optional<std::string>> errors(workers.size());
  for (int w = 0; w < job.workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        AllReducer& reducer = part(w);
        for (int64_t step = 0; step < steps; ++step) {
          const Gradients gradients =
              StepGradients(plan, w * job.replicas_per_worker, job.replicas_per_worker, step,
                            step == 1 ? skip : "");
          if (overlapped.contains(step)) {
            const int last = job.replicas_per_worker - 1;
            const Gradients earlier(gradients.begin(), gradients.end() - 1);
            for (auto it = plan.variables.rbegin(); it != plan.variables.rend(); ++it) {
              const auto found = gradients.back().find(it->name);
              if (found == gradients.back().end()) continue;
              reducer.GradientReady(step, last, it->name, found->second, earlier);
            }
          }
          reducer.Synchronize(step, 0.05, gradients, workers[static_cast<size_t>(w)].pointers);
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(w)] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t w = 0; w < errors.size(); ++w) EXPECT_FALSE(errors[w].has_value()) << *errors[w];
}

struct PathRun {
  std::vector<Worker> workers;
  TensorMap slots;  // worker 0's optimizer slots
};

// Trains every worker's part, takes worker 0's optimizer slots, then closes the parts and the
// communicators.
template <typename Part>
void TrainAndClose(const Job& job, const StrategyPlan& plan, PathRun& run,
                   std::vector<std::unique_ptr<Part>>& parts,
                   std::vector<std::unique_ptr<collective::Communicator>>& communicators, int steps,
                   const std::set<int64_t>& overlapped, const std::string& skip) {
  Train(
      job, plan, run.workers, [&](int w) -> AllReducer& { return *parts[static_cast<size_t>(w)]; },
      steps, overlapped, skip);
  TensorMap values;
  parts[0]->CurrentState(*run.workers[0].pointers[0], values, run.slots);
  parts.clear();
  CloseAll(communicators);
}

optim::OptimizerOptions Adam() { return optim::ParseOptimizerOptions("adam", {{"lr", "0.01"}}); }

PathRun HostPath(const Job& job, int steps, const std::set<int64_t>& overlapped,
                 const std::string& skip = "") {
  const StrategyPlan plan = PlanOf(job);
  PathRun run{MakeWorkers(job), {}};
  auto communicators = Connect(job.workers, "host");
  std::vector<std::unique_ptr<AllReducePart>> parts;
  for (int w = 0; w < job.workers; ++w) {
    parts.push_back(std::make_unique<AllReducePart>(
        plan, communicators[static_cast<size_t>(w)].get(), Adam(), job.total()));
  }
  TrainAndClose(job, plan, run, parts, communicators, steps, overlapped, skip);
  return run;
}

PathRun DevicePath(const Job& job, int steps, const std::set<int64_t>& overlapped,
                   const std::string& skip = "") {
  const StrategyPlan plan = PlanOf(job);
  PathRun run{MakeWorkers(job), {}};
  auto communicators = Connect(job.total(), "device");
  std::vector<std::unique_ptr<DeviceAllReducePart>> parts;
  for (int w = 0; w < job.workers; ++w) {
    std::vector<collective::Communicator*> mine;
    for (int r = 0; r < job.replicas_per_worker; ++r) {
      mine.push_back(communicators[static_cast<size_t>(w * job.replicas_per_worker + r)].get());
    }
    parts.push_back(std::make_unique<DeviceAllReducePart>(
        plan, mine,
        std::vector<tensor::Device>(static_cast<size_t>(job.replicas_per_worker),
                                    tensor::Device::Cpu()),
        Adam(), job.total()));
  }
  TrainAndClose(job, plan, run, parts, communicators, steps, overlapped, skip);
  return run;
}

void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what << " differs";
}

void ExpectClose(const Tensor& a, const Tensor& b, float tolerance, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const float x = a.data<float>()[i];
    const float y = b.data<float>()[i];
    ASSERT_NEAR(x, y, tolerance * std::max(1.0F, std::abs(y))) << what << " element " << i;
  }
}

// With several replicas per worker the device path sums them in another order than the host path
// (every replica is a rank): every replica of the job holds the same bits, within 1e-5 of the host
// path's.
void ExpectReplicasIdenticalAndCloseToTheHostPath(const Job& job, int steps,
                                                  const std::set<int64_t>& overlapped) {
  PathRun host = HostPath(job, steps, overlapped);
  PathRun device = DevicePath(job, steps, overlapped);
  for (const std::string& name : host.workers[0].sessions[0].trainable_names()) {
    const Tensor& first = device.workers[0].sessions[0].variable(name);
    for (Worker& worker : device.workers) {
      for (exec::Session& session : worker.sessions) {
        ExpectSameBits(session.variable(name), first, name);
      }
    }
    ExpectClose(first, host.workers[0].sessions[0].variable(name), 1e-5F, name);
  }
}

// The all-reduce builder's compressor options: none, and each compressor (on the CPU the flat
// form hands views of the buffer to the CPU compressor).
class TwoWorkers : public ::testing::TestWithParam<strategy::BuilderOptions> {};

TEST_P(TwoWorkers, MatchTheHostPathBitForBit) {
  Job job;
  job.options = GetParam();
  const std::set<int64_t> overlapped{0, 2};
  PathRun host = HostPath(job, 4, overlapped);
  PathRun device = DevicePath(job, 4, overlapped);
  exec::Session& reference = host.workers[0].sessions[0];
  std::vector<Worker> fresh = MakeWorkers(job);
  for (const std::string& name : reference.trainable_names()) {
    const Tensor before = fresh[0].sessions[0].variable(name);
    for (int w = 0; w < job.workers; ++w) {
      exec::Session& session = device.workers[static_cast<size_t>(w)].sessions[0];
      ExpectSameBits(session.variable(name), host.workers[0].sessions[0].variable(name),
                     fmt::format("worker {} '{}'", w, name));
    }
    // The steps moved it: the comparison is not between two untouched copies.
    EXPECT_NE(std::memcmp(before.raw(), host.workers[0].sessions[0].variable(name).raw(),
                          before.nbytes()),
              0)
        << name;
  }
  ASSERT_EQ(host.slots.size(), device.slots.size());
  for (const auto& [key, value] : host.slots) {
    ASSERT_TRUE(device.slots.contains(key)) << key;
    ExpectSameBits(device.slots.at(key), value, "slot " + key);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Compressors, TwoWorkers,
    ::testing::Values(strategy::BuilderOptions{},
                      strategy::BuilderOptions{{"compressor", "HorovodCompressorEF"}},
                      strategy::BuilderOptions{{"compressor", "PowerSGDCompressor"}},
                      strategy::BuilderOptions{{"compressor", "TopKCompressorEF"},
                                               {"topkFraction", "0.1"}}),
    [](const ::testing::TestParamInfo<strategy::BuilderOptions>& param) {
      return param.param.empty() ? std::string("NoneCompressor") : param.param.at("compressor");
    });

// An embedding's row-sparse gradients are all-gathered by every replica's rank and merged on the
// host as the host path merges them: with one replica per worker, the same bits (the table, the
// dense layers and Adam's slots), overlapped or not, and a step without the table's gradient.
TEST(DeviceAllReducePartTest, RowSparseGradientsMatchTheHostPathBitForBit) {
  Job job;
  job.model = kEmbeddingModel;
  const StrategyPlan plan = PlanOf(job);
  std::string table;
  for (const VariablePlan& variable : plan.variables) {
    if (variable.sparse) table = variable.name;
  }
  ASSERT_FALSE(table.empty()) << "the embedding fixture has no row-sparse variable";
  EXPECT_EQ(DeviceAllReduceObstacle(plan, tensor::DeviceKind::kCpu), std::nullopt);
  PathRun host = HostPath(job, 4, {0, 2}, table);
  PathRun device = DevicePath(job, 4, {0, 2}, table);
  std::vector<Worker> fresh = MakeWorkers(job);
  for (const std::string& name : host.workers[0].sessions[0].trainable_names()) {
    for (int w = 0; w < job.workers; ++w) {
      ExpectSameBits(device.workers[static_cast<size_t>(w)].sessions[0].variable(name),
                     host.workers[0].sessions[0].variable(name),
                     fmt::format("worker {} '{}'", w, name));
    }
  }
  const Tensor& before = fresh[0].sessions[0].variable(table);
  EXPECT_NE(
      std::memcmp(before.raw(), host.workers[0].sessions[0].variable(table).raw(), before.nbytes()),
      0)
      << "the table did not move";
  ASSERT_EQ(host.slots.size(), device.slots.size());
  for (const auto& [key, value] : host.slots) {
    ASSERT_TRUE(device.slots.contains(key)) << key;
    ExpectSameBits(device.slots.at(key), value, "slot " + key);
  }
}

TEST(DeviceAllReducePartTest, RowSparseGradientsOfTwoReplicasPerWorkerStayIdentical) {
  Job job;
  job.model = kEmbeddingModel;
  job.replicas_per_worker = 2;
  ExpectReplicasIdenticalAndCloseToTheHostPath(job, 3, {1});
}

// A gradient that is not finite fails the worker before it is sent, naming it and the step, on
// the part's own thread (the trainer leaves the check to it: checks_ready_gradients), and the
// sibling replica's rank waiting in the all-reduce is ended at once, not at its timeout. No NaN
// reaches the weights.
TEST(DeviceAllReducePartTest, ANonFiniteGradientFailsTheWorkerNamingItBeforeItIsSent) {
  Job job;
  job.workers = 1;
  job.replicas_per_worker = 2;
  const StrategyPlan plan = PlanOf(job);
  const std::string bad = "fc1.weight";
  ASSERT_TRUE(plan.index.contains(bad));
  std::vector<Worker> workers = MakeWorkers(job);
  auto communicators = Connect(2, "diverged");
  {
    DeviceAllReducePart part(plan, {communicators[0].get(), communicators[1].get()},
                             {tensor::Device::Cpu(), tensor::Device::Cpu()}, Adam(), 2);
    part.Synchronize(0, 0.05, StepGradients(plan, 0, 2, 0, ""), workers[0].pointers);
    Gradients gradients = StepGradients(plan, 0, 2, 1, "");
    gradients[1].at(bad).dense.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    const Gradients earlier(gradients.begin(), gradients.end() - 1);
    const auto started = std::chrono::steady_clock::now();
    try {
      for (auto it = plan.variables.rbegin(); it != plan.variables.rend(); ++it) {
        part.GradientReady(1, 1, it->name, gradients[1].at(it->name), earlier);
      }
      part.Synchronize(1, 0.05, gradients, workers[0].pointers);
      ADD_FAILURE() << "a NaN gradient was sent";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
      EXPECT_THAT(error.what(),
                  HasSubstr("step 2: training diverged: the gradient of 'fc1.weight' is not "
                            "finite (replica 1)"));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15))
        << "the sibling's all-reduce waited for its 30 s timeout";
  }
  for (exec::Session& session : workers[0].sessions) {
    const Tensor& weight = session.variable(bad);
    for (int64_t i = 0; i < weight.numel(); ++i) {
      ASSERT_TRUE(std::isfinite(weight.data<float>()[i])) << "element " << i;
    }
  }
  CloseAll(communicators);
}

TEST(DeviceAllReducePartTest, AVariableWithoutAGradientKeepsItsValueAsOnTheHostPath) {
  const Job job;
  const std::string skip = "fc2.bias";
  const StrategyPlan plan = PlanOf(job);
  ASSERT_TRUE(plan.index.contains(skip));
  PathRun host = HostPath(job, 3, {1}, skip);
  PathRun device = DevicePath(job, 3, {1}, skip);
  for (const std::string& name : host.workers[0].sessions[0].trainable_names()) {
    ExpectSameBits(device.workers[1].sessions[0].variable(name),
                   host.workers[1].sessions[0].variable(name), name);
  }
}

TEST(DeviceAllReducePartTest, TwoReplicasPerWorkerStayIdenticalAndCloseToTheHostPath) {
  Job job;
  job.replicas_per_worker = 2;
  ExpectReplicasIdenticalAndCloseToTheHostPath(job, 4, {1, 3});
}

// Passes every call on to a Gloo rank and records the data-ready marks and all-reduces, in order,
// with the thread that made each.
class RecordingCommunicator final : public collective::Communicator {
 public:
  struct Call {
    std::string what;  // "ready group-0", "reduce group-0"
    std::thread::id thread;
  };

  explicit RecordingCommunicator(collective::Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void DataReady(const std::string& tag) override { Record("ready " + tag); }
  void AllReduceSum(void* data, size_t count, collective::ElementType type,
                    collective::AllReduceAlgorithm algorithm, const std::string& tag) override {
    Record("reduce " + tag);
    inner_.AllReduceSum(data, count, type, algorithm, tag);
  }
  void AllGather(const void* in, size_t count, collective::ElementType type, void* out,
                 const std::string& tag) override {
    inner_.AllGather(in, count, type, out, tag);
  }
  void ReduceScatterSum(const void* in, void* out, size_t count, collective::ElementType type,
                        const std::string& tag) override {
    inner_.ReduceScatterSum(in, out, count, type, tag);
  }
  std::vector<size_t> AllGatherV(const void* in, size_t count, collective::ElementType type,
                                 std::vector<std::byte>& out, const std::string& tag) override {
    return inner_.AllGatherV(in, count, type, out, tag);
  }
  void Broadcast(void* data, size_t bytes, int root, const std::string& tag) override {
    inner_.Broadcast(data, bytes, root, tag);
  }
  void Barrier(const std::string& tag) override { inner_.Barrier(tag); }
  void Abort(const std::string& reason) override { inner_.Abort(reason); }
  int64_t bytes_sent() const override { return inner_.bytes_sent(); }
  int64_t bytes_received() const override { return inner_.bytes_received(); }

  std::vector<Call> calls() {
    const std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  void Record(std::string what) {
    const std::lock_guard lock(mutex_);
    calls_.push_back(Call{std::move(what), std::this_thread::get_id()});
  }

  collective::Communicator& inner_;
  std::mutex mutex_;
  std::vector<Call> calls_;
};

// Two steps of one replica with a group per variable: the first with backward's gradients handed
// out one by one (overlapped), the second all in Synchronize. `timeline` active or not.
std::vector<RecordingCommunicator::Call> MarksAndReductions(bool timeline) {
  Job job;
  job.workers = 1;
  job.options = {{"chunk_size", "1"}};
  const StrategyPlan plan = PlanOf(job);
  std::vector<Worker> workers = MakeWorkers(job);
  auto communicators = Connect(1, timeline ? "marked" : "unmarked");
  RecordingCommunicator recording(*communicators[0]);
  std::optional<observe::Timeline> recorded;
  if (timeline) {
    recorded.emplace(
        (std::filesystem::temp_directory_path() / "device_part_marks.timeline.json").string(),
        "worker-0");
    observe::SetActiveTimeline(&*recorded);
  }
  {
    DeviceAllReducePart part(plan, {&recording}, {tensor::Device::Cpu()}, Adam(), 1);
    for (int64_t step = 0; step < 2; ++step) {
      const Gradients gradients = StepGradients(plan, 0, 1, step, "");
      if (step == 0) {
        for (auto it = plan.variables.rbegin(); it != plan.variables.rend(); ++it) {
          part.GradientReady(step, 0, it->name, gradients[0].at(it->name), {});
        }
      }
      part.Synchronize(step, 0.05, gradients, workers[0].pointers);
    }
  }
  observe::SetActiveTimeline(nullptr);
  CloseAll(communicators);
  return recording.calls();
}

// While a timeline records, every group is marked ready on its communicator by the thread that
// packed it (the training thread), before its reduction, once a step: the mark the NCCL
// communicator timestamps on the GPU's tensor stream (gpu/collective/collective_times.h). The
// communication thread's own ordering comes later, after the earlier groups' reductions.
TEST(DeviceAllReducePartTest, EachGroupIsMarkedReadyByTheTrainingThreadBeforeItsReduction) {
  const std::vector<RecordingCommunicator::Call> calls = MarksAndReductions(true);
  const std::thread::id training = std::this_thread::get_id();
  std::map<std::string, int> marked;  // by group: marks not yet followed by its reduction
  int reductions = 0;
  for (const RecordingCommunicator::Call& call : calls) {
    if (call.what.starts_with("ready ")) {
      EXPECT_EQ(call.thread, training) << call.what;
      EXPECT_EQ(++marked[call.what.substr(6)], 1) << call.what << " twice before its reduction";
    } else {
      ++reductions;
      EXPECT_NE(call.thread, training) << call.what;
      EXPECT_EQ(marked[call.what.substr(7)]--, 1) << call.what << " without its mark first";
    }
  }
  EXPECT_GE(reductions, 2 * 2) << "a group per variable, two steps";
  EXPECT_EQ(static_cast<size_t>(reductions), calls.size() / 2);
  // Without a timeline, nothing is marked.
  for (const RecordingCommunicator::Call& call : MarksAndReductions(false)) {
    EXPECT_FALSE(call.what.starts_with("ready ")) << call.what;
  }
}

TEST(DeviceAllReducePartTest, PlansItCannotRunAreRefusedWithTheReason) {
  const tensor::DeviceKind cpu = tensor::DeviceKind::kCpu;
  Job ps;
  ps.builder = "PS";
  EXPECT_THAT(DeviceAllReduceObstacle(PlanOf(ps), cpu).value_or(""),
              HasSubstr("is on parameter server"));
  Job compressed;
  compressed.options = {{"compressor", "PowerSGDCompressor"}};
  // On the CPU every compressor has its flat form; this test binary has no GPU backend, so no
  // CUDA device has one.
  EXPECT_EQ(DeviceAllReduceObstacle(PlanOf(compressed), cpu), std::nullopt);
  EXPECT_THAT(DeviceAllReduceObstacle(PlanOf(compressed), tensor::DeviceKind::kCuda).value_or(""),
              HasSubstr("is compressed with PowerSGDCompressor, which runs on the host only"));
  Job ring;
  ring.options = {{"all_reduce_spec", "RING"}};
  const StrategyPlan plan = PlanOf(ring);
  EXPECT_THAT(DeviceAllReduceObstacle(plan, cpu).value_or(""), HasSubstr("spec RING"));
  const auto communicators = Connect(1, "refused");
  try {
    DeviceAllReducePart part(plan, {communicators[0].get()}, {tensor::Device::Cpu()}, Adam(), 1);
    ADD_FAILURE() << "a RING plan was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("all-reduce on the replicas' devices"));
  }
  EXPECT_EQ(DeviceAllReduceObstacle(PlanOf(Job{}), cpu), std::nullopt);
}

}  // namespace
}  // namespace autodist::sync
