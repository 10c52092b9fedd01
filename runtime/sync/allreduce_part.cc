#include "runtime/sync/allreduce_part.h"

#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <set>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/observe/timeline.h"
#include "runtime/sync/gradient_sum.h"
#include "runtime/sync/sparse_all_gather.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::sync {
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

}  // namespace

AllReducePart::AllReducePart(const StrategyPlan& plan, collective::Communicator* communicator,
                             const optim::OptimizerOptions& optimizer, int total_replicas)
    : plan_(plan),
      communicator_(communicator),
      optimizer_(optim::MakeOptimizer(optimizer)),
      inverse_replicas_(1.0F / static_cast<float>(total_replicas)) {
  if (plan_.groups.empty()) return;
  AD_CHECK(communicator_ != nullptr, kInternal, "all-reduce groups without a communicator");
  for (const int group : plan_.groups) {
    const std::vector<const ShardPlan*> members = plan_.UniformGroupMembers(group);
    compressors_[group] = compress::MakeCompressor(members.front()->compressor);
    durations_[group] = &observe::ProcessMetrics().all_reduce_duration.With({GroupName(group)});
    std::set<std::string> variables;
    for (const ShardPlan* member : members) variables.insert(member->variable);
    group_variables_[group] = static_cast<int>(variables.size());
  }
  thread_ = std::thread([this] { CommunicationLoop(); });
}

AllReducePart::~AllReducePart() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AllReducePart::LoadOptimizerState(const TensorMap& shard_slots) {
  if (!shard_slots.empty()) optimizer_->LoadState(shard_slots);
}

tensor::SparseGradient AllReducePart::AllGatherSparse(const tensor::SparseGradient& local,
                                                      const std::string& tag) {
  GatheredSparse gathered = sync::AllGatherSparse(*communicator_, local, tag);
  sparse_sent_ += gathered.sent_bytes;
  sparse_bytes_ += gathered.local_bytes;
  return std::move(gathered.merged);
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
  if (shard.range.axis == 0) {
    // A shard along the first axis is contiguous rows of the variable: updated where it lies,
    // not copied out and back (for a 25.6 MB table in 8 shards that was 2 x 25.6 MB of copies a
    // step, for a sparse update of a few hundred rows).
    Tensor parameter = whole.RowsView(shard.range.offset, shard.range.extent);
    apply(parameter);
    for (size_t r = 1; r < replicas.size(); ++r) {
      Tensor& other = replicas[r]->variable(variable.name);
      if (!other.SharesStorageWith(whole)) WriteShard(other, shard, parameter, "all-reduce");
    }
    return;
  }
  Tensor parameter = Slice(whole, shard.range);
  apply(parameter);
  for (Session* replica : replicas) {
    WriteShard(replica->variable(variable.name), shard, parameter, "all-reduce");
  }
}

exec::Gradient AllReducePart::OwnedSum(const std::vector<const Gradient*>& parts) {
  Gradient sum = SumGradients(parts);
  if (parts.size() > 1) return sum;  // already a fresh tensor
  // One replica: SumGradients hands back the replica's own tensors, which the collectives would
  // overwrite in place while the trainer still reads them.
  if (sum.is_sparse()) {
    sum.sparse->indices = sum.sparse->indices.Clone();
    sum.sparse->values = sum.sparse->values.Clone();
  } else {
    sum.dense = sum.dense.Clone();
  }
  return sum;
}

void AllReducePart::GradientReady(int64_t step, int replica, const std::string& variable,
                                  const Gradient& gradient,
                                  const std::vector<std::map<std::string, Gradient>>& earlier) {
  if (plan_.groups.empty() || !plan_.index.contains(variable)) return;
  std::vector<const Gradient*> parts;
  for (int r = 0; r < replica; ++r) {
    const auto it = earlier[static_cast<size_t>(r)].find(variable);
    if (it == earlier[static_cast<size_t>(r)].end()) return;  // no gradient this step
    parts.push_back(&it->second);
  }
  parts.push_back(&gradient);
  std::lock_guard lock(mutex_);
  if (overlap_step_ != step) {
    overlap_step_ = step;
    summed_.clear();
    missing_ = group_variables_;
  }
  Gradient& sum = summed_[variable];
  sum = OwnedSum(parts);
  std::set<int> groups;
  for (const ShardPlan& shard : plan_.Variable(variable).shards) {
    if (shard.kind == SyncKind::kAllReduce) groups.insert(shard.group);
  }
  for (const int group : groups) {
    if (--missing_.at(group) == 0) {
      queued_.push_back(WorkFor(group));
      if (observe::Timeline* timeline = observe::ActiveTimeline()) {
        timeline->Instant("sync", GroupName(group) + " ready",
                          fmt::format(R"("step":{})", step + 1));
      }
    }
  }
  changed_.notify_all();
}

void AllReducePart::CommunicationLoop() {
  if (observe::Timeline* timeline = observe::ActiveTimeline()) timeline->NameThread("all-reduce");
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !queued_.empty(); });
    if (stopping_) return;
    const GroupWork work = std::move(queued_.front());
    queued_.pop_front();
    const int64_t step = overlap_step_;
    busy_ = true;
    lock.unlock();
    ReducedGroup reduced;
    std::exception_ptr error;
    try {
      reduced = ReduceGroup(work, step);
    } catch (...) {
      error = std::current_exception();  // rethrown by Synchronize on the training thread
    }
    lock.lock();
    busy_ = false;
    if (error) {
      if (!error_) error_ = error;
      queued_.clear();
    } else {
      done_[work.group] = std::move(reduced);
    }
    changed_.notify_all();
  }
}

std::map<int, AllReducePart::ReducedGroup> AllReducePart::TakeOverlapped() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return queued_.empty() && !busy_; });
  if (error_) {
    std::exception_ptr error = error_;
    error_ = nullptr;
    done_.clear();
    std::rethrow_exception(error);
  }
  return std::exchange(done_, {});
}

AllReducePart::GroupWork AllReducePart::WorkFor(int group) {
  GroupWork work;
  work.group = group;
  for (const ShardPlan* shard : plan_.GroupMembers(group)) {
    const auto it = summed_.find(shard->variable);
    if (it != summed_.end()) work.members.emplace_back(shard, &it->second);
  }
  return work;
}

AllReducePart::ReducedGroup AllReducePart::ReduceGroup(const GroupWork& work, int64_t step) {
  const int group = work.group;
  const std::string name = GroupName(group);
  // Compression and the collectives within (traced_communicator.h records those).
  const observe::Span span("sync", [&] {
    return observe::SpanText{"reduce " + name, fmt::format(R"("step":{})", step + 1)};
  });
  const observe::ScopedDuration timed(*durations_.at(group));
  ReducedGroup reduced;
  std::vector<compress::NamedGradient> dense;
  for (const auto& [shard, sum_pointer] : work.members) {
    const Gradient& sum = *sum_pointer;
    const bool partitioned = plan_.Variable(shard->variable).partitioned;
    Gradient& g = reduced.gradients.emplace_back();
    if (sum.is_sparse()) {
      g.sparse = partitioned ? SliceSparse(*sum.sparse, shard->range) : *sum.sparse;
    } else {
      // Unpartitioned dense sums are reduced in place: each belongs to this group alone.
      g.dense = partitioned ? Slice(sum.dense, shard->range) : sum.dense;
      dense.push_back(compress::NamedGradient{shard->name, &g.dense});
    }
    reduced.shards.push_back(shard);
  }
  if (!dense.empty()) compressors_.at(group)->Reduce(name, dense, *communicator_, step);
  for (size_t i = 0; i < reduced.shards.size(); ++i) {
    Gradient& g = reduced.gradients[i];
    if (g.is_sparse()) g.sparse = AllGatherSparse(*g.sparse, name + "/" + reduced.shards[i]->name);
  }
  return reduced;
}

void AllReducePart::Synchronize(int64_t step, double lr,
                                const std::vector<std::map<std::string, Gradient>>& gradients,
                                const std::vector<Session*>& replicas) {
  if (plan_.groups.empty()) return;
  std::map<int, ReducedGroup> reduced = TakeOverlapped();
  {
    // The communication thread is idle now; the groups backward did not complete (or a run
    // without overlap) are summed and reduced here, in group order.
    std::lock_guard lock(mutex_);
    if (overlap_step_ != step) summed_.clear();
    overlap_step_ = -1;
    for (const VariablePlan& variable : plan_.variables) {
      if (summed_.contains(variable.name) || !gradients[0].contains(variable.name)) continue;
      std::vector<const Gradient*> parts;
      parts.reserve(gradients.size());
      for (const auto& replica : gradients) parts.push_back(&replica.at(variable.name));
      summed_.emplace(variable.name, OwnedSum(parts));
    }
  }
  for (const int group : plan_.groups) {
    if (!reduced.contains(group)) reduced[group] = ReduceGroup(WorkFor(group), step);
  }
  const observe::Span span("optimizer", "optimizer");
  optimizer_->set_learning_rate(lr);
  for (const int group : plan_.groups) {
    ReducedGroup& members = reduced.at(group);
    for (size_t i = 0; i < members.shards.size(); ++i) {
      ScaleGradient(members.gradients[i], inverse_replicas_);
      Apply(*members.shards[i], members.gradients[i], replicas);
    }
  }
  CountTraffic();
  std::lock_guard lock(mutex_);
  summed_.clear();
}

void AllReducePart::CountTraffic() {
  const int64_t sent = communicator_->bytes_sent();
  const int64_t received = communicator_->bytes_received();
  observe::RuntimeMetrics& metrics = observe::ProcessMetrics();
  metrics.all_reduce_sent_bytes.Inc(static_cast<double>(sent - counted_sent_));
  metrics.all_reduce_received_bytes.Inc(static_cast<double>(received - counted_received_));
  counted_sent_ = sent;
  counted_received_ = received;
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

}  // namespace autodist::sync
