#include "runtime/kernel/ps_synchronizer.h"

#include <fmt/format.h>

#include <deque>
#include <future>

#include "runtime/common/error.h"
#include "runtime/kernel/sharded_values.h"
#include "runtime/ops/sparse_gradient.h"

namespace autodist::kernel {
namespace {

using exec::Gradient;
using exec::Session;
using tensor::Tensor;

// The sum (not the mean: the servers divide by the job's replica count) of several replicas'
// gradients of one variable, added in replica order.
Gradient SumGradients(const std::vector<const Gradient*>& parts) {
  Gradient sum;
  if (parts.size() == 1) return *parts[0];
  if (parts[0]->is_sparse()) {
    std::vector<const ops::SparseGradient*> sparse;
    for (const Gradient* part : parts) sparse.push_back(&*part->sparse);
    sum.sparse = ops::MergeSparse(sparse);
    return sum;
  }
  sum.dense = parts[0]->dense.Clone();
  float* out = sum.dense.data<float>();
  for (size_t r = 1; r < parts.size(); ++r) {
    AD_CHECK(parts[r]->dense.shape() == sum.dense.shape() && !parts[r]->is_sparse(), kInternal,
             "replica {} has a gradient of another kind or shape", r);
    const float* add = parts[r]->dense.data<float>();
    for (int64_t i = 0; i < sum.dense.numel(); ++i) out[i] += add[i];
  }
  return sum;
}

}  // namespace

// One Step RPC: the gradients of some shards hosted by one server, summed over `replicas`
// replicas from global index `first_replica`. `local_replica` < 0 means the values are shared by
// every replica of this process (a proxy push); otherwise they belong to that replica alone.
struct PsSynchronizer::Push {
  std::string ps_node;
  int local_replica = -1;
  comm::PsStepRequest request;
  std::vector<const ShardPlan*> shards;
  comm::PsValues reply;
};

PsSynchronizer::PsSynchronizer(const StrategyPlan& plan, PsSynchronizerOptions options,
                               comm::CoordinatorClient& coordinator)
    : plan_(plan), options_(std::move(options)), coordinator_(coordinator) {
  AD_CHECK(options_.placement.local_replicas >= 1, kInvalidArgument,
           "node '{}' runs no replica, so it cannot train", options_.node);
  for (const std::string& node : plan_.ps_nodes) {
    const auto it = options_.ps_endpoints.find(node);
    AD_CHECK(it != options_.ps_endpoints.end(), kInvalidArgument,
             "no endpoint is known for parameter server '{}'", node);
    clients_[node] = std::make_unique<comm::PsClient>(node, it->second);
  }
}

PsSynchronizer::~PsSynchronizer() = default;

comm::PsClient& PsSynchronizer::Client(const std::string& ps_node) {
  const auto it = clients_.find(ps_node);
  AD_CHECK(it != clients_.end(), kInternal, "no client for parameter server '{}'", ps_node);
  return *it->second;
}

void PsSynchronizer::InitializeServers(Session& chief, int64_t start_step,
                                       const std::map<std::string, Tensor>& optimizer_state) {
  TensorMap variables;
  for (const VariablePlan& variable : plan_.variables) {
    variables[variable.name] = chief.variable(variable.name);
  }
  const TensorMap values = SplitVariables(plan_, variables);
  const TensorMap state = SplitOptimizerState(plan_, optimizer_state);
  std::vector<std::future<void>> inits;
  for (const std::string& node : plan_.ps_nodes) {
    comm::PsInitRequest request;
    request.optimizer = options_.optimizer;
    request.optimizer_options = options_.optimizer_options;
    request.num_workers = options_.num_workers;
    request.total_replicas = options_.placement.total_replicas;
    request.start_step = start_step;
    for (const ShardPlan* shard : plan_.HostedBy(node)) {
      request.tensors.push_back(comm::HostedTensor{shard->name, shard->sync, shard->staleness,
                                                   plan_.Variable(shard->variable).sparse});
      request.values[shard->name] = values.at(shard->name);
      const std::string prefix = shard->name + "/";
      for (auto it = state.lower_bound(prefix); it != state.end() && it->first.starts_with(prefix);
           ++it) {
        request.optimizer_state[it->first] = it->second;
      }
    }
    inits.push_back(std::async(std::launch::async, [this, node, request = std::move(request)] {
      Client(node).Init(request);
    }));
  }
  for (auto& init : inits) init.get();
}

void PsSynchronizer::PullAll(const std::vector<Session*>& replicas) {
  std::vector<std::future<comm::PsValues>> pulls;
  for (const std::string& node : plan_.ps_nodes) {
    pulls.push_back(
        std::async(std::launch::async, [this, node] { return Client(node).Pull({}, false); }));
  }
  TensorMap shards;
  for (auto& pull : pulls) shards.merge(pull.get().values);
  const TensorMap variables = AssembleVariables(plan_, shards);
  for (Session* replica : replicas) {
    for (const auto& [name, value] : variables) replica->variable(name) = value.Clone();
  }
}

exec::ResumePoint PsSynchronizer::Start(const std::vector<Session*>& replicas,
                                        exec::ResumePoint start,
                                        const std::map<std::string, Tensor>& optimizer_state) {
  if (is_chief()) {
    InitializeServers(*replicas[0], start.step, optimizer_state);
    comm::InitialValues initial;
    initial.step = start.step;
    initial.epoch = start.epoch;
    initial.batch = start.batch;
    for (const std::string& name : replicas[0]->state_names()) {
      initial.tensors[name] = replicas[0]->state(name);
    }
    coordinator_.PutInitialValues(options_.node, initial);
  }
  // Released once the chief has initialized every server and published the start point.
  coordinator_.Barrier(options_.node, "start", options_.wait);
  if (!is_chief()) {
    const comm::InitialValues initial = coordinator_.GetInitialValues(options_.node, options_.wait);
    start = exec::ResumePoint{initial.step, initial.epoch, initial.batch};
    for (Session* replica : replicas) {
      for (const std::string& name : replica->state_names()) {
        const auto it = initial.tensors.find(name);
        AD_CHECK(it != initial.tensors.end(), kFailedPrecondition,
                 "the chief published no initial value for state '{}'", name);
        AD_CHECK(it->second.shape() == replica->state(name).shape(), kFailedPrecondition,
                 "the chief's state '{}' has shape {}, this worker's model has {}", name,
                 tensor::ShapeToString(it->second.shape()),
                 tensor::ShapeToString(replica->state(name).shape()));
        replica->state(name) = it->second.Clone();
      }
    }
  }
  PullAll(replicas);
  return start;
}

void PsSynchronizer::Synchronize(int64_t step, double lr,
                                 const std::vector<std::map<std::string, Gradient>>& gradients,
                                 const std::vector<Session*>& replicas) {
  const int local = static_cast<int>(replicas.size());
  AD_CHECK(local == options_.placement.local_replicas && gradients.size() == replicas.size(),
           kInternal, "expected {} replicas, got {}", options_.placement.local_replicas, local);
  // Gradients cut into the tensors the pushes point at; deques keep addresses stable.
  std::deque<Gradient> owned;
  std::deque<Tensor> dense_parts;
  std::deque<ops::SparseGradient> sparse_parts;
  std::map<std::pair<std::string, int>, Push> pushes;  // (server, local replica or -1)

  const auto add = [&](const VariablePlan& variable, const ShardPlan& shard, const Gradient& g,
                       int local_replica) {
    Push& push = pushes[{shard.ps_node, local_replica}];
    if (push.shards.empty()) {
      push.ps_node = shard.ps_node;
      push.local_replica = local_replica;
      push.request.worker = options_.worker_rank;
      push.request.first_replica =
          options_.placement.first_replica + (local_replica < 0 ? 0 : local_replica);
      push.request.replicas = local_replica < 0 ? local : 1;
      push.request.step = step;
      push.request.learning_rate = lr;
      push.request.pull = true;
    }
    push.shards.push_back(&shard);
    comm::GradientRef ref;
    if (g.is_sparse()) {
      ref.sparse = variable.partitioned
                       ? &sparse_parts.emplace_back(SliceSparse(*g.sparse, shard.range))
                       : &*g.sparse;
    } else {
      ref.dense =
          variable.partitioned ? &dense_parts.emplace_back(Slice(g.dense, shard.range)) : &g.dense;
    }
    push.request.gradients[shard.name] = ref;
  };

  for (const VariablePlan& variable : plan_.variables) {
    // A variable the loss does not reach has no gradient in any replica: nothing to push, as a
    // single process would apply nothing to it.
    if (!gradients[0].contains(variable.name)) continue;
    std::vector<const Gradient*> parts;
    for (int r = 0; r < local; ++r) {
      const auto it = gradients[static_cast<size_t>(r)].find(variable.name);
      AD_CHECK(it != gradients[static_cast<size_t>(r)].end(), kInternal,
               "replica {} has no gradient for '{}'", r, variable.name);
      parts.push_back(&it->second);
    }
    const Gradient* summed = nullptr;
    for (const ShardPlan& shard : variable.shards) {
      if (shard.local_replication || local == 1) {
        if (summed == nullptr) summed = &owned.emplace_back(SumGradients(parts));
        add(variable, shard, *summed, -1);
      } else {
        for (int r = 0; r < local; ++r) add(variable, shard, *parts[static_cast<size_t>(r)], r);
      }
    }
  }

  const auto run = [this](Push& push) { push.reply = Client(push.ps_node).Step(push.request); };
  if (pushes.size() == 1) {
    run(pushes.begin()->second);
  } else {
    std::vector<std::future<void>> running;
    for (auto& [key, push] : pushes) {
      running.push_back(std::async(std::launch::async, [&run, &push] { run(push); }));
    }
    for (auto& future : running) future.get();
  }

  for (auto& [key, push] : pushes) {
    const std::string peer = fmt::format("parameter server {}", push.ps_node);
    for (const ShardPlan* shard : push.shards) {
      const auto it = push.reply.values.find(shard->name);
      AD_CHECK(it != push.reply.values.end(), kFailedPrecondition,
               "{} returned no value for '{}' after step {}", peer, shard->name, step);
      const VariablePlan& variable = plan_.Variable(shard->variable);
      for (int r = 0; r < local; ++r) {
        if (push.local_replica >= 0 && push.local_replica != r) continue;
        Tensor& target = replicas[static_cast<size_t>(r)]->variable(variable.name);
        if (variable.partitioned) {
          WriteShard(target, *shard, it->second, peer);
        } else {
          AD_CHECK(it->second.shape() == target.shape(), kFailedPrecondition,
                   "{}: '{}' came back with shape {}, expected {}", peer, shard->name,
                   tensor::ShapeToString(it->second.shape()),
                   tensor::ShapeToString(target.shape()));
          // Replicas only read variables (the servers apply the optimizer), so a proxy value
          // can be shared by every replica without a copy.
          target = it->second;
        }
      }
    }
  }
}

exec::TrainingState PsSynchronizer::CurrentState(const std::vector<Session*>& /*replicas*/) {
  TensorMap values;
  TensorMap slots;
  for (const std::string& node : plan_.ps_nodes) {
    std::set<std::string> hosted;
    for (const ShardPlan* shard : plan_.HostedBy(node)) hosted.insert(shard->name);
    for (auto& [name, value] : Client(node).Pull({}, true).values) {
      (hosted.contains(name) ? values : slots)[name] = std::move(value);
    }
  }
  exec::TrainingState state;
  state.variables = AssembleVariables(plan_, values);
  state.optimizer = AssembleOptimizerState(plan_, slots);
  return state;
}

std::map<std::string, Tensor> PsSynchronizer::ReduceStates(const std::string& round,
                                                           const std::vector<Session*>& replicas) {
  // This process's replicas summed in order; the coordinator adds the workers' sums in rank
  // order and divides by the job's replica count where the reduction is a mean.
  std::map<std::string, Tensor> sums;
  for (const std::string& name : replicas[0]->state_names()) {
    Tensor total = replicas[0]->state(name).Clone();
    float* out = total.data<float>();
    for (size_t r = 1; r < replicas.size(); ++r) {
      const float* add = replicas[r]->state(name).data<float>();
      for (int64_t i = 0; i < total.numel(); ++i) out[i] += add[i];
    }
    sums.emplace(name, std::move(total));
  }
  return coordinator_.ReduceStates(options_.node, round, static_cast<int>(replicas.size()), sums,
                                   options_.sum_states, options_.wait);
}

void PsSynchronizer::ReportProgress(int64_t step, int64_t total, double loss,
                                    double samples_per_second) {
  autodist::proto::ProgressReport report;
  report.set_node(options_.node);
  report.set_step(step);
  report.set_total_steps(total);
  report.set_loss(loss);
  report.set_samples_per_second(samples_per_second);
  report.set_samples(step * options_.batch_size * options_.placement.local_replicas);
  coordinator_.ReportProgress(report);
}

std::map<std::string, comm::PsStats> PsSynchronizer::ServerStats() {
  std::map<std::string, comm::PsStats> stats;
  for (const std::string& node : plan_.ps_nodes) stats[node] = Client(node).Stats();
  return stats;
}

}  // namespace autodist::kernel
