#include "runtime/sync/strategy_synchronizer.h"

#include <fmt/format.h>

#include <future>

#include "runtime/common/error.h"
#include "runtime/sync/allreduce_part.h"
#include "runtime/sync/device_all_reduce_part.h"
#include "runtime/sync/sharded_values.h"

namespace autodist::sync {
namespace {

using exec::Gradient;
using exec::Session;
using tensor::Tensor;

ParameterServerPartOptions ServerOptions(const StrategySynchronizerOptions& options) {
  ParameterServerPartOptions out;
  out.worker_rank = options.worker_rank;
  out.num_workers = options.num_workers;
  out.placement = options.placement;
  out.endpoints = options.ps_endpoints;
  out.optimizer = options.optimizer;
  out.optimizer_options = options.optimizer_options;
  if (!options.replica_devices.empty()) out.reply_staging = options.replica_devices.front().kind;
  return out;
}

// The tensors of `state` ("<shard>/<slot>") whose shard is synchronized the `kind` way.
TensorMap SlotsOf(const StrategyPlan& plan, const TensorMap& state, SyncKind kind) {
  TensorMap out;
  for (const auto& [key, value] : state) {
    const std::string shard = key.substr(0, key.rfind('/'));
    if (plan.Shard(shard).kind == kind) out[key] = value;
  }
  return out;
}

// Initial values the chief publishes through the coordinator: the all-reduced variables (the
// parameter servers hold the others), their optimizer slots under "optimizer:<shard>/<slot>",
// and replica-local state.
constexpr char kOptimizerPrefix[] = "optimizer:";

// `value` (on the host) as `target`'s new value, on target's device and, there, in its storage.
void Assign(Tensor& target, const Tensor& value) {
  if (target.device().is_cpu()) {
    target = value.Clone();
  } else {
    target.CopyFrom(value);
  }
}

std::unique_ptr<AllReducer> MakeAllReducer(
    const StrategyPlan& plan, const StrategySynchronizerOptions& options,
    collective::Communicator* communicator,
    std::vector<collective::Communicator*> replica_communicators) {
  if (replica_communicators.empty()) {
    return std::make_unique<AllReducePart>(plan, communicator, options.parsed_optimizer,
                                           options.placement.total_replicas);
  }
  std::vector<tensor::Device> devices = options.replica_devices;
  if (devices.empty()) devices.assign(replica_communicators.size(), tensor::Device::Cpu());
  return std::make_unique<DeviceAllReducePart>(plan, std::move(replica_communicators),
                                               std::move(devices), options.parsed_optimizer,
                                               options.placement.total_replicas);
}

}  // namespace

StrategySynchronizer::StrategySynchronizer(
    const StrategyPlan& plan, StrategySynchronizerOptions options,
    coordinator::CoordinatorClient& coordinator, collective::Communicator* communicator,
    std::vector<collective::Communicator*> replica_communicators)
    : plan_(plan),
      options_(std::move(options)),
      coordinator_(coordinator),
      on_devices_(!replica_communicators.empty()),
      servers_(plan, ServerOptions(options_)),
      all_reduce_(MakeAllReducer(plan_, options_, communicator, std::move(replica_communicators))) {
  AD_CHECK(options_.placement.local_replicas >= 1, kInvalidArgument,
           "node '{}' runs no replica, so it cannot train", options_.node);
  AD_CHECK(
      !on_devices_ ||
          static_cast<int>(options_.replica_devices.size()) == options_.placement.local_replicas ||
          options_.replica_devices.empty(),
      kInternal, "{} replica devices for {} local replicas", options_.replica_devices.size(),
      options_.placement.local_replicas);
}

StrategySynchronizer::~StrategySynchronizer() = default;

exec::ResumePoint StrategySynchronizer::Start(
    const std::vector<Session*>& replicas, exec::ResumePoint start,
    const std::map<std::string, Tensor>& optimizer_state) {
  Session& chief = *replicas[0];
  if (is_chief()) {
    TensorMap variables;
    for (const VariablePlan& variable : plan_.variables) {
      variables[variable.name] = chief.variable(variable.name);
    }
    const TensorMap slots = SplitOptimizerState(plan_, optimizer_state);
    servers_.Initialize(variables, SlotsOf(plan_, slots, SyncKind::kParameterServer), start.step);
    coordinator::InitialValues initial;
    initial.step = start.step;
    initial.epoch = start.epoch;
    initial.batch = start.batch;
    for (const std::string& name : chief.state_names()) {
      initial.tensors[name] = chief.state(name).To(tensor::Device::Cpu());
    }
    for (const VariablePlan& variable : plan_.variables) {
      const bool all_reduced =
          std::any_of(variable.shards.begin(), variable.shards.end(),
                      [](const ShardPlan& shard) { return shard.kind == SyncKind::kAllReduce; });
      if (all_reduced) {
        initial.tensors[variable.name] = chief.variable(variable.name).To(tensor::Device::Cpu());
      }
    }
    const TensorMap all_reduce_slots = SlotsOf(plan_, slots, SyncKind::kAllReduce);
    for (const auto& [key, value] : all_reduce_slots) {
      initial.tensors[kOptimizerPrefix + key] = value;
    }
    all_reduce_->LoadOptimizerState(all_reduce_slots);
    coordinator_.PutInitialValues(options_.node, initial);
    for (size_t r = 1; r < replicas.size(); ++r) {
      for (const auto& [name, value] : initial.tensors) {
        if (plan_.index.contains(name)) Assign(replicas[r]->variable(name), value);
      }
    }
  }
  // Released once the chief has initialized every server and published the start point.
  coordinator_.Barrier(options_.node, "start", options_.wait);
  if (!is_chief()) {
    const coordinator::InitialValues initial =
        coordinator_.GetInitialValues(options_.node, options_.wait);
    start = exec::ResumePoint{initial.step, initial.epoch, initial.batch};
    TensorMap all_reduce_slots;
    for (const auto& [name, value] : initial.tensors) {
      if (name.starts_with(kOptimizerPrefix)) {
        all_reduce_slots[name.substr(sizeof(kOptimizerPrefix) - 1)] = value;
      }
    }
    all_reduce_->LoadOptimizerState(all_reduce_slots);
    for (Session* replica : replicas) {
      const auto set = [&](const std::string& name, Tensor& target) {
        const auto it = initial.tensors.find(name);
        AD_CHECK(it != initial.tensors.end(), kFailedPrecondition,
                 "the chief published no initial value for '{}'", name);
        AD_CHECK(it->second.shape() == target.shape(), kFailedPrecondition,
                 "the chief's '{}' has shape {}, this worker's model has {}", name,
                 tensor::ShapeToString(it->second.shape()), tensor::ShapeToString(target.shape()));
        Assign(target, it->second);
      };
      for (const std::string& name : replica->state_names()) set(name, replica->state(name));
      for (const VariablePlan& variable : plan_.variables) {
        if (initial.tensors.contains(variable.name)) {
          set(variable.name, replica->variable(variable.name));
        }
      }
    }
  }
  servers_.PullAll(replicas);
  return start;
}

void StrategySynchronizer::Synchronize(
    int64_t step, double lr, const std::vector<std::map<std::string, Gradient>>& gradients,
    const std::vector<Session*>& replicas) {
  const int local = static_cast<int>(replicas.size());
  AD_CHECK(local == options_.placement.local_replicas && gradients.size() == replicas.size(),
           kInternal, "expected {} replicas, got {}", options_.placement.local_replicas, local);
  if (servers_.empty()) {
    all_reduce_->Synchronize(step, lr, gradients, replicas);
    return;
  }
  if (all_reduce_->empty()) {
    servers_.Synchronize(step, lr, gradients, replicas);
    return;
  }
  // Both at once: the pushes wait on the network while the collectives run here. They touch
  // disjoint variables.
  auto pushes =
      std::async(std::launch::async, [&] { servers_.Synchronize(step, lr, gradients, replicas); });
  try {
    all_reduce_->Synchronize(step, lr, gradients, replicas);
  } catch (...) {
    // The pushes reference this frame's arguments: let them end before the error leaves it.
    pushes.wait();
    throw;
  }
  pushes.get();
}

exec::TrainingState StrategySynchronizer::CurrentState(const std::vector<Session*>& replicas) {
  TensorMap shard_values;
  TensorMap shard_slots;
  servers_.CurrentState(shard_values, shard_slots);
  all_reduce_->CurrentState(*replicas[0], shard_values, shard_slots);
  exec::TrainingState state;
  state.variables = AssembleVariables(plan_, shard_values);
  state.optimizer = AssembleOptimizerState(plan_, shard_slots);
  return state;
}

exec::CheckpointState StrategySynchronizer::StateForCheckpoint(
    const std::vector<Session*>& replicas, const std::string& checkpoint_path) {
  if (servers_.empty()) return exec::CheckpointState{CurrentState(replicas), {}, {}, {}};
  exec::CheckpointState state;
  std::map<std::string, autodist::proto::SaveReply> saved;
  try {
    saved = servers_.SaveShards(checkpoint_path);
  } catch (const Error& error) {
    state.in_memory = CurrentState(replicas);
    state.warning = fmt::format(
        "{}; the chief pulled the parameter servers' shards into the checkpoint instead (put "
        "the checkpoint directory on a volume every parameter server mounts to have them write "
        "their own)",
        error.what());
    return state;
  }
  TensorMap shard_values;
  TensorMap shard_slots;
  all_reduce_->CurrentState(*replicas[0], shard_values, shard_slots);
  state.in_memory.variables = AssembleVariables(plan_, shard_values, /*skip_absent=*/true);
  state.in_memory.optimizer = AssembleOptimizerState(plan_, shard_slots);
  PiecesOfSavedShards(plan_, saved, checkpoint_path, state.pieced_variables,
                      state.pieced_optimizer);
  return state;
}

std::map<std::string, Tensor> StrategySynchronizer::ReduceStates(
    const std::string& round, const std::vector<Session*>& replicas) {
  // This process's replicas summed in order; the coordinator adds the workers' sums in rank
  // order and divides by the job's replica count where the reduction is a mean.
  // On the host: the coordinator's messages carry host tensors.
  std::map<std::string, Tensor> sums;
  for (const std::string& name : replicas[0]->state_names()) {
    Tensor total = HostCopy(replicas[0]->state(name));
    auto* out = total.data<float>();
    for (size_t r = 1; r < replicas.size(); ++r) {
      const Tensor add = replicas[r]->state(name).To(tensor::Device::Cpu());
      const auto* in = add.data<float>();
      for (int64_t i = 0; i < total.numel(); ++i) out[i] += in[i];
    }
    sums.emplace(name, std::move(total));
  }
  std::map<std::string, Tensor> reduced =
      coordinator_.ReduceStates(options_.node, round, static_cast<int>(replicas.size()), sums,
                                options_.sum_states, options_.wait);
  // Evaluation puts them into the first replica's session, on its device.
  for (auto& [name, value] : reduced) value = value.To(replicas[0]->state(name).device());
  return reduced;
}

void StrategySynchronizer::ReportProgress(int64_t step, int64_t total, double loss,
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

SynchronizerTraffic StrategySynchronizer::Traffic() {
  SynchronizerTraffic traffic;
  if (is_chief()) traffic.servers = servers_.ServerStats();
  traffic.all_reduce = all_reduce_->Stats();
  return traffic;
}

exec::WireTotals StrategySynchronizer::Wire() {
  const SynchronizerTraffic traffic = Traffic();
  exec::WireTotals wire;
  if (plan_.has_parameter_servers() && is_chief()) {
    int64_t bytes = 0;
    int64_t pushed = 0;
    int64_t pushed_decoded = 0;
    for (const auto& [node, stats] : traffic.servers) {
      bytes += stats.bytes_pushed + stats.bytes_pulled;
      pushed += stats.bytes_pushed;
      pushed_decoded += stats.bytes_pushed_decoded;
    }
    wire.parameter_server_bytes = bytes;
    if (pushed > 0) {
      wire.parameter_server_compression_ratio =
          static_cast<double>(pushed_decoded) / static_cast<double>(pushed);
    }
  }
  if (plan_.has_all_reduce()) {
    wire.all_reduce_bytes = traffic.all_reduce.wire_bytes;
    wire.all_reduce_compression_ratio = traffic.all_reduce.ratio();
  }
  return wire;
}

}  // namespace autodist::sync
