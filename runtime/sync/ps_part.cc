#include "runtime/sync/ps_part.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <future>
#include <set>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/common/error.h"
#include "runtime/compress/device_push_encoder.h"
#include "runtime/observe/timeline.h"
#include "runtime/sync/gradient_sum.h"
#include "runtime/sync/sharded_values.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::sync {
namespace {

using exec::Gradient;
using exec::Session;
using tensor::Tensor;

bool HasParameterServerShard(const VariablePlan& variable) {
  return std::any_of(variable.shards.begin(), variable.shards.end(),
                     [](const ShardPlan& s) { return s.kind == SyncKind::kParameterServer; });
}

}  // namespace

// One Step RPC: the gradients of some shards hosted by one server, summed over `replicas`
// replicas from global index `first_replica`. `local_replica` < 0 means the values are shared by
// every replica of this process (a proxy push); otherwise they belong to that replica alone.
struct ParameterServerPart::Push {
  std::string ps_node;
  int local_replica = -1;
  ps::PsStepRequest request;
  std::vector<const ShardPlan*> shards;
  ps::PsValues reply;
};

ParameterServerPart::ParameterServerPart(const StrategyPlan& plan,
                                         ParameterServerPartOptions options)
    : plan_(plan), options_(std::move(options)) {
  for (const std::string& node : plan_.ps_nodes) {
    const auto it = options_.endpoints.find(node);
    AD_CHECK(it != options_.endpoints.end(), kInvalidArgument,
             "no endpoint is known for parameter server '{}'", node);
    clients_[node] = std::make_unique<ps::PsClient>(
        node, it->second, rpc::RpcOptions{}, ps::kDefaultCallDeadline, options_.reply_staging);
  }
  const bool one_replica = options_.placement.local_replicas == 1;
  for (const VariablePlan& variable : plan_.variables) {
    if (variable.sparse || variable.partitioned || variable.shards.size() != 1) continue;
    const ShardPlan& shard = variable.shards.front();
    if (shard.kind == SyncKind::kParameterServer &&
        compress::HasDevicePushEncoder(shard.push_compressor, options_.reply_staging) &&
        (one_replica || !shard.local_replication)) {
      encoded_on_device_.insert(variable.name);
    }
  }
}

ParameterServerPart::~ParameterServerPart() = default;

ps::PsClient& ParameterServerPart::Client(const std::string& ps_node) {
  const auto it = clients_.find(ps_node);
  AD_CHECK(it != clients_.end(), kInternal, "no client for parameter server '{}'", ps_node);
  return *it->second;
}

bool ParameterServerPart::TakesRows(const ShardPlan& shard,
                                    const std::vector<Session*>& replicas) const {
  const VariablePlan& variable = plan_.Variable(shard.variable);
  if (!variable.sparse || shard.range.axis != 0 || variable.shape.empty()) return false;
  return std::all_of(replicas.begin(), replicas.end(), [&](Session* replica) {
    return replica->variable(variable.name).device().is_cpu();
  });
}

void ParameterServerPart::Initialize(const TensorMap& variables, const TensorMap& optimizer_state,
                                     int64_t start_step) {
  const TensorMap values = SplitVariables(plan_, variables);
  std::vector<std::future<void>> inits;
  for (const std::string& node : plan_.ps_nodes) {
    ps::PsInitRequest request;
    request.optimizer = options_.optimizer;
    request.optimizer_options = options_.optimizer_options;
    request.num_workers = options_.num_workers;
    request.total_replicas = options_.placement.total_replicas;
    request.start_step = start_step;
    for (const ShardPlan* shard : plan_.HostedBy(node)) {
      request.tensors.push_back(ps::HostedTensor{shard->name, shard->sync, shard->staleness,
                                                 plan_.Variable(shard->variable).sparse});
      request.values[shard->name] = values.at(shard->name);
      const std::string prefix = shard->name + "/";
      for (auto it = optimizer_state.lower_bound(prefix);
           it != optimizer_state.end() && it->first.starts_with(prefix); ++it) {
        request.optimizer_state[it->first] = it->second;
      }
    }
    inits.push_back(std::async(std::launch::async, [this, node, request = std::move(request)] {
      Client(node).Init(request);
    }));
  }
  for (auto& init : inits) init.get();
}

void ParameterServerPart::PullAll(const std::vector<Session*>& replicas) {
  std::vector<std::future<ps::PsValues>> pulls;
  for (const std::string& node : plan_.ps_nodes) {
    pulls.push_back(
        std::async(std::launch::async, [this, node] { return Client(node).Pull({}, false); }));
  }
  TensorMap shards;
  held_.clear();
  for (auto& future : pulls) {
    ps::PsValues pulled = future.get();
    for (const auto& [name, version] : pulled.versions) {
      if (!TakesRows(plan_.Shard(name), replicas)) continue;
      // Every replica stream now holds this version, whichever serves the shard.
      for (int r = -1; r < static_cast<int>(replicas.size()); ++r) {
        held_[{name, r}] = ps::HeldVersion{pulled.incarnation, version};
      }
    }
    shards.merge(pulled.values);
  }
  for (const auto& [name, value] : shards) {
    const ShardPlan& shard = plan_.Shard(name);
    for (Session* replica : replicas) {
      Tensor& target = replica->variable(shard.variable);
      if (plan_.Variable(shard.variable).partitioned) {
        WriteShard(target, shard, value, "parameter server " + shard.ps_node);
      } else {
        target = value.Clone();
      }
    }
  }
}

void ParameterServerPart::Synchronize(int64_t step, double lr,
                                      const std::vector<std::map<std::string, Gradient>>& gradients,
                                      const std::vector<Session*>& replicas) {
  const int local = static_cast<int>(replicas.size());
  AD_CHECK(local == options_.placement.local_replicas && gradients.size() == replicas.size(),
           kInternal, "expected {} replicas, got {}", options_.placement.local_replicas, local);
  // Gradients cut into the tensors the pushes point at; deques keep addresses stable.
  std::deque<Gradient> owned;
  std::deque<Tensor> dense_parts;
  std::deque<tensor::SparseGradient> sparse_parts;
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
    ps::GradientRef ref;
    // Error feedback is kept by the server's client per (first_replica, shard name): one
    // residual per replica stream (a replica, or this process's proxy sum) and shard.
    ref.compression = shard.push_compressor;
    ref.topk_fraction = shard.push_topk_fraction;
    if (g.is_sparse()) {
      ref.sparse = variable.partitioned
                       ? &sparse_parts.emplace_back(SliceSparse(*g.sparse, shard.range))
                       : &*g.sparse;
    } else {
      ref.dense =
          variable.partitioned ? &dense_parts.emplace_back(Slice(g.dense, shard.range)) : &g.dense;
    }
    push.request.gradients[shard.name] = ref;
    if (const auto held = held_.find({shard.name, local_replica}); held != held_.end()) {
      push.request.held[shard.name] = held->second;
    }
  };

  for (const VariablePlan& variable : plan_.variables) {
    if (!HasParameterServerShard(variable)) continue;
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
      if (shard.kind != SyncKind::kParameterServer) continue;
      if (shard.local_replication || local == 1) {
        if (summed == nullptr) summed = &owned.emplace_back(SumGradients(parts));
        add(variable, shard, *summed, -1);
      } else {
        for (int r = 0; r < local; ++r) add(variable, shard, *parts[static_cast<size_t>(r)], r);
      }
    }
  }

  if (pushes.empty()) return;
  const auto run = [this](Push& push) {
    // One Step call: the push of this server's shards, the wait for the step, the pull.
    const observe::Span span("ps", [&] {
      return observe::SpanText{
          "push+pull " + push.ps_node,
          fmt::format(R"("step":{},"shards":{})", push.request.step + 1, push.shards.size())};
    });
    push.reply = Client(push.ps_node).Step(push.request);
  };
  if (pushes.size() == 1) {
    run(pushes.begin()->second);
  } else {
    std::vector<std::future<void>> running;
    for (auto& entry : pushes) {
      Push* push = &entry.second;
      running.push_back(std::async(std::launch::async, [&run, push] { run(*push); }));
    }
    for (auto& future : running) future.get();
  }

  for (auto& [key, push] : pushes) {
    const std::string peer = fmt::format("parameter server {}", push.ps_node);
    for (const ShardPlan* shard : push.shards) {
      const VariablePlan& variable = plan_.Variable(shard->variable);
      const auto version = push.reply.versions.find(shard->name);
      AD_CHECK(version != push.reply.versions.end(), kFailedPrecondition,
               "{} returned no version for '{}' after step {}", peer, shard->name, step);
      std::vector<Tensor*> targets;  // the replicas' copies this reply is for
      for (int r = 0; r < local; ++r) {
        if (push.local_replica >= 0 && push.local_replica != r) continue;
        targets.push_back(&replicas[static_cast<size_t>(r)]->variable(variable.name));
      }
      if (const auto rows = push.reply.changed_rows.find(shard->name);
          rows != push.reply.changed_rows.end()) {
        // Only the rows changed since the version the request said the replicas hold.
        AD_CHECK(push.request.held.contains(shard->name), kFailedPrecondition,
                 "{} returned rows of '{}' after step {}, but no version of it was held", peer,
                 shard->name, step);
        const std::string what = fmt::format("{}: rows of '{}'", peer, shard->name);
        std::vector<const Tensor*> written;  // replicas sharing a proxy's value: written once
        for (Tensor* target : targets) {
          if (std::any_of(written.begin(), written.end(),
                          [&](const Tensor* done) { return done->SharesStorageWith(*target); })) {
            continue;
          }
          WriteRows(*target, rows->second, shard->range, what.c_str());
          written.push_back(target);
        }
      } else {
        const auto it = push.reply.values.find(shard->name);
        AD_CHECK(it != push.reply.values.end(), kFailedPrecondition,
                 "{} returned no value for '{}' after step {}", peer, shard->name, step);
        for (Tensor* target : targets) {
          if (variable.partitioned) {
            WriteShard(*target, *shard, it->second, peer);
          } else {
            AD_CHECK(it->second.shape() == target->shape(), kFailedPrecondition,
                     "{}: '{}' came back with shape {}, expected {}", peer, shard->name,
                     tensor::ShapeToString(it->second.shape()),
                     tensor::ShapeToString(target->shape()));
            // Replicas only read variables (the servers apply the optimizer), so a proxy value
            // can be shared by every replica without a copy.
            *target = it->second;
          }
        }
      }
      if (TakesRows(*shard, replicas)) {
        held_[{shard->name, push.local_replica}] =
            ps::HeldVersion{push.reply.incarnation, version->second};
      }
    }
  }
}

void ParameterServerPart::CurrentState(TensorMap& shard_values, TensorMap& shard_slots) {
  for (const std::string& node : plan_.ps_nodes) {
    std::set<std::string> hosted;
    for (const ShardPlan* shard : plan_.HostedBy(node)) hosted.insert(shard->name);
    for (auto& [name, value] : Client(node).Pull({}, true).values) {
      (hosted.contains(name) ? shard_values : shard_slots)[name] = std::move(value);
    }
  }
}

std::map<std::string, autodist::proto::SaveReply> ParameterServerPart::SaveShards(
    const std::string& checkpoint_path) {
  std::map<std::string, std::future<autodist::proto::SaveReply>> saves;
  for (size_t i = 0; i < plan_.ps_nodes.size(); ++i) {
    const std::string& node = plan_.ps_nodes[i];
    const std::string path = checkpoint::ShardFilePath(checkpoint_path, static_cast<int>(i));
    saves.emplace(node, std::async(std::launch::async, [this, node, path] {
                    return Client(node).Save(path, options_.worker_rank);
                  }));
  }
  std::map<std::string, autodist::proto::SaveReply> replies;
  std::exception_ptr failure;
  for (auto& [node, save] : saves) {  // every call finishes before this returns
    try {
      replies[node] = save.get();
    } catch (const Error&) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
  return replies;
}

std::map<std::string, ps::PsStats> ParameterServerPart::ServerStats() {
  std::map<std::string, ps::PsStats> stats;
  for (const std::string& node : plan_.ps_nodes) stats[node] = Client(node).Stats();
  return stats;
}

}  // namespace autodist::sync
