// Whole-variable values and optimizer state <-> the per-shard tensors the parameter servers host.
// Checkpoints always hold whole variables and "<variable>/<slot>" optimizer state, whatever the
// strategy, so a run can resume under another strategy (or in one process).
#pragma once

#include <map>
#include <string>

#include "proto/ps_service.pb.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/sync/strategy_plan.h"
#include "runtime/tensor/tensor.h"

namespace autodist::sync {

using TensorMap = std::map<std::string, tensor::Tensor>;

// A fresh copy of `value` in host memory, wherever it is: what checkpoints and the coordinator's
// messages carry from replicas that may sit on a device.
tensor::Tensor HostCopy(const tensor::Tensor& value);

// Every shard of every planned variable, keyed by shard name, cut from `variables` (whole values
// by variable name). Throws InvalidArgument naming a planned variable that is missing or has
// another shape.
TensorMap SplitVariables(const StrategyPlan& plan, const TensorMap& variables);

// Optimizer state "<variable>/<slot>" as "<shard>/<slot>": buffers shaped like the variable are
// cut like it; anything else (step counts) is copied to every shard. Throws InvalidArgument for a
// key naming no planned variable.
TensorMap SplitOptimizerState(const StrategyPlan& plan, const TensorMap& state);

// The inverse of SplitVariables: whole variables from shard values (every shard must be present;
// with `skip_absent`, a variable none of whose shards is present is left out).
TensorMap AssembleVariables(const StrategyPlan& plan, const TensorMap& shards,
                            bool skip_absent = false);

// The checkpoint pieces of what the parameter servers wrote themselves (their Save replies, by
// PS node; checkpoint::ShardFilePath of `checkpoint_path` for server i of plan.ps_nodes): each
// shard is a piece of its variable along its range; a slot shaped like its shard likewise; any
// other slot (a step count) is the first shard's, whole. Each list is added to.
void PiecesOfSavedShards(const StrategyPlan& plan,
                         const std::map<std::string, autodist::proto::SaveReply>& saved,
                         const std::string& checkpoint_path,
                         std::vector<checkpoint::PiecedTensor>& variables,
                         std::vector<checkpoint::PiecedTensor>& optimizer);

// The inverse of SplitOptimizerState: buffers reassembled; other slots taken from the first
// shard (in synchronous training every shard counts the same steps).
TensorMap AssembleOptimizerState(const StrategyPlan& plan, const TensorMap& shard_state);

// Writes the value of `shard` (as pulled) into the whole `variable` tensor, in place.
void WriteShard(tensor::Tensor& variable, const ShardPlan& shard, const tensor::Tensor& value,
                const std::string& peer);

}  // namespace autodist::sync
