#include "runtime/sync/sharded_values.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::sync {
namespace {

using tensor::Tensor;

// Splits "<owner>/<slot>" at the last '/': slot names never contain one, tensor names may.
std::pair<std::string, std::string> SplitSlotKey(const std::string& key) {
  const size_t slash = key.rfind('/');
  AD_CHECK(slash != std::string::npos && slash > 0 && slash + 1 < key.size(), kInvalidArgument,
           "optimizer state '{}': expected a key '<variable>/<slot>'", key);
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::map<std::string, std::pair<const VariablePlan*, const ShardPlan*>> ShardIndex(
    const StrategyPlan& plan) {
  std::map<std::string, std::pair<const VariablePlan*, const ShardPlan*>> index;
  for (const VariablePlan& variable : plan.variables) {
    for (const ShardPlan& shard : variable.shards) index[shard.name] = {&variable, &shard};
  }
  return index;
}

}  // namespace

TensorMap SplitVariables(const StrategyPlan& plan, const TensorMap& variables) {
  TensorMap shards;
  for (const VariablePlan& variable : plan.variables) {
    const auto it = variables.find(variable.name);
    AD_CHECK(it != variables.end(), kInvalidArgument, "no value for variable '{}'", variable.name);
    AD_CHECK(it->second.shape() == variable.shape, kInvalidArgument,
             "variable '{}' has shape {}, the strategy expects {}", variable.name,
             tensor::ShapeToString(it->second.shape()), tensor::ShapeToString(variable.shape));
    for (const ShardPlan& shard : variable.shards) {
      shards[shard.name] =
          variable.partitioned ? Slice(it->second, shard.range) : it->second.Clone();
    }
  }
  return shards;
}

TensorMap SplitOptimizerState(const StrategyPlan& plan, const TensorMap& state) {
  TensorMap out;
  for (const auto& [key, value] : state) {
    const auto [owner, slot] = SplitSlotKey(key);
    AD_CHECK(plan.index.contains(owner), kInvalidArgument,
             "optimizer state '{}' belongs to no trainable variable of the strategy", key);
    const VariablePlan* variable = &plan.Variable(owner);
    const bool buffer = value.shape() == variable->shape;
    for (const ShardPlan& shard : variable->shards) {
      out[fmt::format("{}/{}", shard.name, slot)] =
          buffer && variable->partitioned ? Slice(value, shard.range) : value.Clone();
    }
  }
  return out;
}

TensorMap AssembleVariables(const StrategyPlan& plan, const TensorMap& shards) {
  TensorMap variables;
  for (const VariablePlan& variable : plan.variables) {
    Tensor whole;
    for (const ShardPlan& shard : variable.shards) {
      const auto it = shards.find(shard.name);
      AD_CHECK(it != shards.end(), kInternal, "no value was pulled for '{}'", shard.name);
      if (!variable.partitioned) {
        whole = it->second;
        break;
      }
      if (!whole.defined()) whole = Tensor(it->second.dtype(), variable.shape);
      WriteShard(whole, shard, it->second, "parameter server " + shard.ps_node);
    }
    variables[variable.name] = whole;
  }
  return variables;
}

TensorMap AssembleOptimizerState(const StrategyPlan& plan, const TensorMap& shard_state) {
  const auto index = ShardIndex(plan);
  TensorMap out;
  for (const auto& [key, value] : shard_state) {
    const auto [owner, slot] = SplitSlotKey(key);
    const auto it = index.find(owner);
    AD_CHECK(it != index.end(), kInternal, "optimizer state '{}' belongs to no planned shard", key);
    const auto [variable, shard] = it->second;
    const std::string whole_key = fmt::format("{}/{}", variable->name, slot);
    if (!variable->partitioned) {
      out[whole_key] = value;
      continue;
    }
    const bool buffer = value.shape() == shard->shape;
    if (!buffer) {
      if (shard == &variable->shards.front()) out[whole_key] = value;
      continue;
    }
    Tensor& whole = out[whole_key];
    if (!whole.defined()) whole = Tensor(value.dtype(), variable->shape);
    WriteShard(whole, *shard, value, "parameter server " + shard->ps_node);
  }
  return out;
}

void WriteShard(Tensor& variable, const ShardPlan& shard, const Tensor& value,
                const std::string& peer) {
  const std::string what = fmt::format("{}: '{}'", peer, shard.name);
  WriteSlice(variable, value, shard.range, what.c_str());
}

}  // namespace autodist::sync
