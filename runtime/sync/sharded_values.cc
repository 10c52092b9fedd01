#include "runtime/sync/sharded_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "runtime/checkpoint/checkpoint_dir.h"
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

TensorMap AssembleVariables(const StrategyPlan& plan, const TensorMap& shards, bool skip_absent) {
  TensorMap variables;
  for (const VariablePlan& variable : plan.variables) {
    if (skip_absent && std::none_of(variable.shards.begin(), variable.shards.end(),
                                    [&](const ShardPlan& s) { return shards.contains(s.name); })) {
      continue;
    }
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

void PiecesOfSavedShards(const StrategyPlan& plan,
                         const std::map<std::string, autodist::proto::SaveReply>& saved,
                         const std::string& checkpoint_path,
                         std::vector<checkpoint::PiecedTensor>& variables,
                         std::vector<checkpoint::PiecedTensor>& optimizer) {
  std::map<std::string, std::string> file_of;  // PS node -> shard file name
  for (size_t i = 0; i < plan.ps_nodes.size(); ++i) {
    file_of[plan.ps_nodes[i]] =
        std::filesystem::path(checkpoint::ShardFilePath(checkpoint_path, static_cast<int>(i)))
            .filename()
            .string();
  }
  const auto piece_of = [&](const VariablePlan& variable, const ShardPlan& shard,
                            const std::string& name) {
    if (!variable.partitioned) return checkpoint::ShardPieceRef{file_of.at(shard.ps_node), name};
    return checkpoint::ShardPieceRef{file_of.at(shard.ps_node), name, shard.range.axis,
                                     shard.range.offset, shard.range.extent};
  };
  // What each server wrote: its slots by owner shard, "<shard>/<slot>" -> dims and type.
  std::map<std::string, const autodist::proto::SavedTensor*> slots;
  for (const auto& [node, reply] : saved) {
    for (const auto& slot : reply.optimizer_state()) slots[slot.name()] = &slot;
  }
  const auto index = ShardIndex(plan);
  std::map<std::string, checkpoint::PiecedTensor> by_key;  // "<variable>/<slot>", in key order
  for (const auto& [key, slot] : slots) {
    const auto [owner, slot_name] = SplitSlotKey(key);
    const auto it = index.find(owner);
    AD_CHECK(it != index.end(), kInternal, "optimizer state '{}' belongs to no planned shard", key);
    const auto [variable, shard] = it->second;
    const tensor::Shape dims(slot->dims().begin(), slot->dims().end());
    const bool buffer = dims == shard->shape;
    if (!buffer && shard != &variable->shards.front()) continue;
    checkpoint::PiecedTensor& whole = by_key[fmt::format("{}/{}", variable->name, slot_name)];
    whole.name = fmt::format("{}/{}", variable->name, slot_name);
    whole.dtype = tensor::DTypeFromOnnx(slot->data_type(), key);
    whole.shape = buffer ? variable->shape : dims;
    whole.pieces.push_back(buffer ? piece_of(*variable, *shard, key)
                                  : checkpoint::ShardPieceRef{file_of.at(shard->ps_node), key});
  }
  for (const VariablePlan& variable : plan.variables) {
    checkpoint::PiecedTensor whole{variable.name, tensor::DType::kFloat32, variable.shape, {}};
    for (const ShardPlan& shard : variable.shards) {
      if (shard.kind != SyncKind::kParameterServer) continue;
      whole.pieces.push_back(piece_of(variable, shard, shard.name));
    }
    if (!whole.pieces.empty()) variables.push_back(std::move(whole));
  }
  for (auto& [key, whole] : by_key) optimizer.push_back(std::move(whole));
}

void WriteShard(Tensor& variable, const ShardPlan& shard, const Tensor& value,
                const std::string& peer) {
  const std::string what = fmt::format("{}: '{}'", peer, shard.name);
  WriteSlice(variable, value, shard.range, what.c_str());
}

Tensor HostCopy(const Tensor& value) {
  return value.device().is_cpu() ? value.Clone() : value.To(tensor::Device::Cpu());
}

}  // namespace autodist::sync
