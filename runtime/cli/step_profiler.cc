#include "runtime/cli/step_profiler.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <vector>

#include "runtime/cli/trainer_options.h"
#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/collective/registry.h"
#include "runtime/common/error.h"
#include "runtime/common/median.h"
#include "runtime/compress/compressor.h"
#include "runtime/exec/local_synchronizer.h"
#include "runtime/graph/graph_item.h"
#include "runtime/job/job_views.h"
#include "runtime/ops/parallel.h"

namespace autodist::cli {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration duration) { return std::chrono::duration<double>(duration).count(); }

// The local optimizer, with the times of each step's gradients and update written down.
class ProfilingSynchronizer : public exec::StepSynchronizer {
 public:
  ProfilingSynchronizer(const optim::OptimizerOptions& optimizer, std::set<std::string> sum_states,
                        int64_t warmup)
      : local_(optimizer, std::move(sum_states)), warmup_(warmup) {}

  exec::ResumePoint Start(const std::vector<exec::Session*>& replicas, exec::ResumePoint start,
                          const std::map<std::string, tensor::Tensor>& state) override {
    const exec::ResumePoint point = local_.Start(replicas, start, state);
    step_start_ = Clock::now();
    return point;
  }

  bool overlaps_backward() const override { return true; }

  void GradientReady(int64_t step, int /*replica*/, const std::string& variable,
                     const exec::Gradient& gradient,
                     const std::vector<std::map<std::string, exec::Gradient>>& earlier) override {
    const Clock::time_point now = Clock::now();
    if (step < warmup_) return;
    current_.ready[variable] = now;
    if (!gradient.is_sparse()) return;
    auto rows = static_cast<double>(gradient.sparse->indices.shape()[0]);
    for (const auto& replica : earlier) {
      const auto it = replica.find(variable);
      if (it != replica.end() && it->second.is_sparse()) {
        rows += static_cast<double>(it->second.sparse->indices.shape()[0]);
      }
    }
    current_.sparse_rows[variable] = rows / static_cast<double>(earlier.size() + 1);
  }

  void Synchronize(int64_t step, double lr,
                   const std::vector<std::map<std::string, exec::Gradient>>& gradients,
                   const std::vector<exec::Session*>& replicas) override {
    const Clock::time_point update_start = Clock::now();
    local_.Synchronize(step, lr, gradients, replicas);
    const Clock::time_point update_end = Clock::now();
    if (step >= warmup_ && !current_.ready.empty()) {
      current_.start = step_start_;
      current_.update_seconds = Seconds(update_end - update_start);
      steps_.push_back(std::move(current_));
    }
    current_ = {};
    step_start_ = update_end;
  }

  exec::TrainingState CurrentState(const std::vector<exec::Session*>& replicas) override {
    return local_.CurrentState(replicas);
  }
  std::map<std::string, tensor::Tensor> ReduceStates(
      const std::string& round, const std::vector<exec::Session*>& replicas) override {
    return local_.ReduceStates(round, replicas);
  }

  // The measured steps summarized into `profile`.
  void Summarize(strategy::StepProfile& profile) const {
    AD_CHECK(!steps_.empty(), kInternal, "profile: no step was measured");
    std::vector<double> forward;
    std::vector<double> backward;
    std::vector<double> update;
    std::map<std::string, double> fraction_sum;
    std::map<std::string, double> rows_sum;
    for (const Step& step : steps_) {
      Clock::time_point first = step.ready.begin()->second;
      Clock::time_point last = first;
      for (const auto& [name, at] : step.ready) {
        first = std::min(first, at);
        last = std::max(last, at);
      }
      forward.push_back(Seconds(first - step.start));
      backward.push_back(Seconds(last - first));
      update.push_back(step.update_seconds);
      const double span = Seconds(last - first);
      for (const auto& [name, at] : step.ready) {
        fraction_sum[name] += span == 0 ? 1.0 : Seconds(at - first) / span;
      }
      for (const auto& [name, rows] : step.sparse_rows) rows_sum[name] += rows;
    }
    const auto count = static_cast<double>(steps_.size());
    profile.forward_seconds = Median(forward);
    profile.backward_seconds = Median(backward);
    profile.update_seconds = Median(update);
    for (const auto& [name, sum] : fraction_sum) profile.ready_fraction[name] = sum / count;
    for (const auto& [name, sum] : rows_sum) profile.sparse_rows[name] = sum / count;
  }

 private:
  struct Step {
    Clock::time_point start;
    std::map<std::string, Clock::time_point> ready;
    std::map<std::string, double> sparse_rows;
    double update_seconds = 0;
  };

  exec::LocalSynchronizer local_;
  int64_t warmup_;
  Clock::time_point step_start_;
  Step current_;
  std::vector<Step> steps_;
};

// Rank 0's time per call of `body`, with rank 1 running the same calls beside it: the median of
// `rounds` rounds of `calls` calls each.
template <typename Body>
double PairSeconds(collective::Communicator& mine, collective::Communicator& theirs, int rounds,
                   int calls, Body body) {
  std::vector<double> per_call;
  for (int round = 0; round < rounds; ++round) {
    auto peer = std::async(std::launch::async, [&] {
      for (int i = 0; i < calls; ++i) body(theirs);
    });
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < calls; ++i) body(mine);
    per_call.push_back(Seconds(Clock::now() - start) / calls);
    peer.get();
  }
  return Median(per_call);
}

// The runtime's fixed costs, measured here rather than assumed: a small (4 KiB) all-reduce
// between two ranks over loopback (threads of this process: the hand-offs and the algorithm's
// set-up, the part of a collective no link speed changes), and each compressor's pass over the
// model's dense gradients as one group on a single rank (no wire: its compute alone), less the
// uncompressed pass.
void MeasureRuntimeCosts(const std::vector<graph::Variable>& variables,
                         strategy::StepProfile& profile) {
  const auto store = std::make_shared<collective::MemoryRendezvousStore>();
  const auto make = [&](int rank, int size, const std::string& prefix) {
    collective::CommunicatorOptions options;
    options.rank = rank;
    options.size = size;
    options.rendezvous = store;
    options.prefix = prefix;
    options.connect_timeout = std::chrono::seconds(30);
    return collective::MakeCommunicator("gloo", options);
  };
  auto second = std::async(std::launch::async, [&] { return make(1, 2, "profile-pair"); });
  const std::unique_ptr<collective::Communicator> first = make(0, 2, "profile-pair");
  const std::unique_ptr<collective::Communicator> other = second.get();
  constexpr size_t kSmallCollective = 1024;  // floats: 4 KiB
  profile.collective_seconds =
      PairSeconds(*first, *other, 5, 40, [](collective::Communicator& communicator) {
        std::vector<float> data(kSmallCollective, 1.0F);
        communicator.AllReduceSum(data.data(), data.size(), collective::ElementType::kFloat32,
                                  collective::AllReduceAlgorithm::kAuto, "profile-small");
      });

  constexpr size_t kLargeCollective = size_t{1} << 20;  // floats: 4 MiB
  std::vector<float> first_data(kLargeCollective, 0.0F);
  std::vector<float> other_data(kLargeCollective, 0.0F);
  const double large =
      PairSeconds(*first, *other, 3, 4, [&](collective::Communicator& communicator) {
        std::vector<float>& data = &communicator == first.get() ? first_data : other_data;
        communicator.AllReduceSum(data.data(), data.size(), collective::ElementType::kFloat32,
                                  collective::AllReduceAlgorithm::kAuto, "profile-large");
      });
  // Two ranks: each sends and receives 2 (W-1)/W = all of the message.
  profile.loopback_gbps = static_cast<double>(kLargeCollective * sizeof(float)) * 8 / 1e9 /
                          std::max(large - profile.collective_seconds, 1e-9);

  const std::unique_ptr<collective::Communicator> alone = make(0, 1, "profile-single");
  std::mt19937 random(7);
  std::normal_distribution<float> normal;
  std::vector<std::pair<std::string, tensor::Tensor>> gradients;
  double elements = 0;
  for (const graph::Variable& variable : variables) {
    if (variable.sparse) continue;
    tensor::Tensor gradient(tensor::DType::kFloat32, variable.shape);
    auto* data = gradient.data<float>();
    for (int64_t i = 0; i < gradient.numel(); ++i) data[i] = normal(random);
    elements += static_cast<double>(gradient.numel());
    gradients.emplace_back(variable.name, std::move(gradient));
  }
  if (gradients.empty()) return;
  const auto reduce_seconds = [&](const compress::CompressorOptions& options) {
    const std::unique_ptr<compress::Compressor> compressor = compress::MakeCompressor(options);
    std::vector<double> times;
    for (int64_t step = 0; step < 6; ++step) {
      std::vector<tensor::Tensor> copies;
      std::vector<compress::NamedGradient> group;
      copies.reserve(gradients.size());
      for (const auto& [name, gradient] : gradients) copies.push_back(gradient.Clone());
      for (size_t i = 0; i < copies.size(); ++i) group.push_back({gradients[i].first, &copies[i]});
      const Clock::time_point start = Clock::now();
      compressor->Reduce("profile", group, *alone, step);
      if (step > 0) times.push_back(Seconds(Clock::now() - start));  // step 0 allocates
    }
    return Median(times);
  };
  const double uncompressed = reduce_seconds({});
  for (const compress::CompressorKind kind :
       {compress::CompressorKind::kHorovod, compress::CompressorKind::kHorovodEF,
        compress::CompressorKind::kPowerSGD, compress::CompressorKind::kTopKEF}) {
    compress::CompressorOptions options;
    options.kind = kind;
    profile.compress_seconds_per_element[compress::CompressorName(kind)] =
        std::max(0.0, reduce_seconds(options) - uncompressed) / elements;
  }
}

}  // namespace

strategy::StepProfile ProfileJob(const job::JobSpec& job, const ProfileOptions& options) {
  AD_CHECK(options.steps >= 1 && options.warmup_steps >= 0, kInvalidArgument,
           "profile: expected at least 1 measured step and no negative warm-up, got {} and {}",
           options.steps, options.warmup_steps);
  job::RequireLocalModel(job);
  const job::ResourcesSpec& resources = job.resources;
  const int per_worker =
      resources.gpus_per_worker > 0 ? resources.gpus_per_worker : resources.replicas_per_worker;
  if (options.threads > 0) ops::SetNumThreads(options.threads);
  exec::TrainerOptions trainer =
      TrainerOptionsFromJob(job, 0, per_worker, static_cast<int>(job::TotalReplicas(job)));
  trainer.epochs = 0;
  trainer.steps = options.warmup_steps + options.steps;
  trainer.eval_files.clear();
  trainer.checkpoint_dir.clear();
  trainer.resume = false;
  trainer.export_path.clear();
  trainer.tensorboard_dir.clear();
  trainer.log_every = trainer.steps;
  ProfilingSynchronizer synchronizer(trainer.optimizer, job::SumReducedStates(job),
                                     options.warmup_steps);
  exec::Train(trainer, synchronizer, [](const std::string&) {});

  strategy::StepProfile profile = strategy::DefaultRuntimeCosts();
  profile.source = "measured";
  profile.batch_per_replica = job.data.batch_size_per_replica;
  profile.replicas_per_worker = per_worker;
  synchronizer.Summarize(profile);
  const std::vector<graph::Variable> variables =
      graph::GraphItem::Load(trainer.model).TrainableVariables();
  MeasureRuntimeCosts(variables, profile);
  // A trainable variable the loss does not reach never gets a gradient: nothing waits for it.
  for (const graph::Variable& variable : variables) {
    profile.ready_fraction.try_emplace(variable.name, 1.0);
    if (variable.sparse) profile.sparse_rows.try_emplace(variable.name, 0.0);
  }
  return profile;
}

}  // namespace autodist::cli
