#include "runtime/kernel/allreduce_part.h"

#include <fmt/format.h>

#include <cstring>
#include <deque>

#include "runtime/common/error.h"
#include "runtime/kernel/gradient_sum.h"
#include "runtime/ops/sparse_gradient.h"

namespace autodist::kernel {
namespace {

using exec::Gradient;
using exec::Session;
using tensor::Tensor;

std::string GroupName(int group) { return fmt::format("group-{}", group); }

// Copies `from` into `to` in place when they have the same shape (replicas keep their own
// storage), or replaces `to` by a copy.
void CopyInto(Tensor& to, const Tensor& from) {
  if (to.defined() && to.shape() == from.shape() && to.dtype() == from.dtype() &&
      !to.SharesStorageWith(from)) {
    std::memcpy(to.raw(), from.raw(), from.nbytes());
  } else {
    to = from.Clone();
  }
}

bool SameSettings(const ShardPlan& a, const ShardPlan& b) {
  return a.algorithm == b.algorithm && a.compressor.kind == b.compressor.kind &&
         a.compressor.rank == b.compressor.rank &&
         a.compressor.start_step == b.compressor.start_step &&
         a.compressor.min_compression_elements == b.compressor.min_compression_elements &&
         a.compressor.fraction == b.compressor.fraction;
}

}  // namespace

AllReducePart::AllReducePart(const StrategyPlan& plan, comm::Communicator* communicator,
                             const optim::OptimizerOptions& optimizer, int total_replicas)
    : plan_(plan),
      communicator_(communicator),
      optimizer_(optim::MakeOptimizer(optimizer)),
      inverse_replicas_(1.0F / static_cast<float>(total_replicas)) {
  if (plan_.groups.empty()) return;
  AD_CHECK(communicator_ != nullptr, kInternal, "all-reduce groups without a communicator");
  for (const int group : plan_.groups) {
    const std::vector<const ShardPlan*> members = plan_.GroupMembers(group);
    for (const ShardPlan* member : members) {
      AD_CHECK(SameSettings(*member, *members.front()), kInvalidArgument,
               "strategy: '{}' and '{}' share all-reduce group {} but not its algorithm and "
               "compressor settings",
               members.front()->name, member->name, group);
    }
    compressors_[group] = compress::MakeCompressor(members.front()->compressor);
  }
}

AllReducePart::~AllReducePart() = default;

void AllReducePart::LoadOptimizerState(const TensorMap& shard_slots) {
  if (!shard_slots.empty()) optimizer_->LoadState(shard_slots);
}

ops::SparseGradient AllReducePart::AllGatherSparse(const ops::SparseGradient& local,
                                                   const std::string& tag) {
  const int64_t rows = local.indices.numel();
  const int64_t row_elements = rows == 0 ? tensor::NumElements(local.dense_shape) /
                                               std::max<int64_t>(local.dense_shape.at(0), 1)
                                         : local.values.numel() / rows;
  std::vector<std::byte> indices;
  std::vector<std::byte> values;
  const int64_t sent_before = communicator_->bytes_sent();
  const std::vector<size_t> counts =
      communicator_->AllGatherV(local.indices.raw(), static_cast<size_t>(rows),
                                comm::ElementType::kInt64, indices, tag + "/indices");
  communicator_->AllGatherV(local.values.raw(), static_cast<size_t>(rows * row_elements),
                            comm::ElementType::kFloat32, values, tag + "/rows");
  sparse_sent_ += communicator_->bytes_sent() - sent_before;
  sparse_bytes_ += static_cast<int64_t>(local.indices.nbytes() + local.values.nbytes());

  std::vector<ops::SparseGradient> parts;
  size_t row_offset = 0;
  for (const size_t count : counts) {
    ops::SparseGradient part;
    part.dense_shape = local.dense_shape;
    const auto n = static_cast<int64_t>(count);
    part.indices = Tensor(tensor::DType::kInt64, {n});
    tensor::Shape shape = local.values.shape();
    shape[0] = n;
    part.values = Tensor(tensor::DType::kFloat32, shape);
    std::memcpy(part.indices.raw(), indices.data() + row_offset * sizeof(int64_t),
                part.indices.nbytes());
    std::memcpy(part.values.raw(),
                values.data() + row_offset * static_cast<size_t>(row_elements) * sizeof(float),
                part.values.nbytes());
    row_offset += count;
    parts.push_back(std::move(part));
  }
  return ops::MergeSparse(parts);
}

void AllReducePart::Apply(const ShardPlan& shard, const Gradient& mean,
                          const std::vector<Session*>& replicas) {
  const VariablePlan& variable = plan_.Variable(shard.variable);
  Tensor& whole = replicas[0]->variable(variable.name);
  const auto apply = [&](Tensor& parameter) {
    if (mean.is_sparse()) {
      optimizer_->ApplySparse(shard.name, parameter, *mean.sparse);
    } else {
      optimizer_->Apply(shard.name, parameter, mean.dense);
    }
  };
  if (!variable.partitioned) {
    apply(whole);
    for (size_t r = 1; r < replicas.size(); ++r)
      CopyInto(replicas[r]->variable(variable.name), whole);
    return;
  }
  Tensor parameter = Slice(whole, shard.range);
  apply(parameter);
  for (Session* replica : replicas) {
    WriteShard(replica->variable(variable.name), shard, parameter, "all-reduce");
  }
}

void AllReducePart::Synchronize(int64_t step, double lr,
                                const std::vector<std::map<std::string, Gradient>>& gradients,
                                const std::vector<Session*>& replicas) {
  if (plan_.groups.empty()) return;
  optimizer_->set_learning_rate(lr);
  // This process's replicas summed once per variable; shards slice the sum.
  std::map<std::string, Gradient> summed;
  const auto local_sum = [&](const std::string& variable) -> const Gradient* {
    if (!gradients[0].contains(variable)) return nullptr;  // the loss does not reach it
    auto it = summed.find(variable);
    if (it == summed.end()) {
      std::vector<const Gradient*> parts;
      for (const auto& replica : gradients) parts.push_back(&replica.at(variable));
      it = summed.emplace(variable, SumGradients(parts)).first;
    }
    return &it->second;
  };
  for (const int group : plan_.groups) {
    const std::string name = GroupName(group);
    std::deque<Gradient> shard_gradients;
    std::vector<const ShardPlan*> shards;
    std::vector<compress::NamedGradient> dense;
    for (const ShardPlan* shard : plan_.GroupMembers(group)) {
      const Gradient* sum = local_sum(shard->variable);
      if (sum == nullptr) continue;
      const bool partitioned = plan_.Variable(shard->variable).partitioned;
      Gradient& g = shard_gradients.emplace_back();
      if (sum->is_sparse()) {
        g.sparse = partitioned ? SliceSparse(*sum->sparse, shard->range) : *sum->sparse;
      } else {
        // Unpartitioned dense sums are reduced in place: nothing else reads them this step.
        g.dense = partitioned ? Slice(sum->dense, shard->range) : sum->dense;
        dense.push_back(compress::NamedGradient{shard->name, &g.dense});
      }
      shards.push_back(shard);
    }
    if (!dense.empty()) compressors_.at(group)->Reduce(name, dense, *communicator_, step);
    for (size_t i = 0; i < shards.size(); ++i) {
      Gradient& g = shard_gradients[i];
      if (g.is_sparse()) g.sparse = AllGatherSparse(*g.sparse, name + "/" + shards[i]->name);
      ScaleGradient(g, inverse_replicas_);
      Apply(*shards[i], g, replicas);
    }
  }
}

void AllReducePart::CurrentState(Session& replica, TensorMap& shard_values,
                                 TensorMap& shard_slots) const {
  for (const VariablePlan& variable : plan_.variables) {
    for (const ShardPlan& shard : variable.shards) {
      if (shard.kind != SyncKind::kAllReduce) continue;
      const Tensor& whole = replica.variable(variable.name);
      shard_values[shard.name] = variable.partitioned ? Slice(whole, shard.range) : whole.Clone();
    }
  }
  for (auto& [key, value] : optimizer_->SaveState()) shard_slots[key] = std::move(value);
}

compress::CompressionStats AllReducePart::Stats() const {
  compress::CompressionStats total;
  for (const auto& [group, compressor] : compressors_) {
    total.raw_bytes += compressor->stats().raw_bytes;
    total.wire_bytes += compressor->stats().wire_bytes;
  }
  total.raw_bytes += sparse_bytes_;
  total.wire_bytes += sparse_sent_;
  return total;
}

}  // namespace autodist::kernel
