#include "runtime/sync/device_all_reduce_part.h"

#include <fmt/format.h>

#include <deque>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/observe/timeline.h"
#include "runtime/sync/gradient_sum.h"
#include "runtime/sync/sparse_all_gather.h"

namespace autodist::sync {
namespace {

using exec::Gradient;
using exec::Session;
using tensor::Tensor;

// Members start at multiples of 4 elements (16 bytes): the fused optimizer's float4 path.
constexpr int64_t kAlignElements = 4;

int64_t Aligned(int64_t elements) {
  return (elements + kAlignElements - 1) / kAlignElements * kAlignElements;
}

// Makes `device` the calling thread's before it queues work there (several GPUs, one thread).
void Select(const tensor::Device& device) {
  if (!device.is_cpu()) tensor::MemoryOf(device).Select(device);
}

}  // namespace

std::optional<std::string> DeviceAllReduceObstacle(const StrategyPlan& plan,
                                                   tensor::DeviceKind device) {
  for (const VariablePlan& variable : plan.variables) {
    if (variable.partitioned) {
      return fmt::format("variable '{}' is partitioned, and shards are reduced in host memory",
                         variable.name);
    }
    for (const ShardPlan& shard : variable.shards) {
      if (shard.kind == SyncKind::kParameterServer) {
        return fmt::format("variable '{}' is on parameter server {}", variable.name, shard.ps_node);
      }
      if (shard.compressor.kind != compress::CompressorKind::kNone &&
          !compress::HasFlatCompressor(shard.compressor.kind, device)) {
        return fmt::format("variable '{}' is compressed with {}, which runs on the host only",
                           variable.name, compress::CompressorName(shard.compressor.kind));
      }
      if (shard.algorithm != collective::AllReduceAlgorithm::kAuto) {
        return fmt::format(
            "variable '{}' asks for all-reduce spec RING (Gloo's ring in host memory)",
            variable.name);
      }
    }
  }
  return std::nullopt;
}

DeviceAllReducePart::DeviceAllReducePart(const StrategyPlan& plan,
                                         std::vector<collective::Communicator*> communicators,
                                         std::vector<tensor::Device> devices,
                                         const optim::OptimizerOptions& optimizer,
                                         int total_replicas)
    : plan_(plan) {
  AD_CHECK(!communicators.empty() && communicators.size() == devices.size(), kInternal,
           "{} communicators for {} replica devices", communicators.size(), devices.size());
  if (const std::optional<std::string> obstacle = DeviceAllReduceObstacle(plan, devices[0].kind)) {
    Fail(ErrorCode::kInvalidArgument, "all-reduce on the replicas' devices: {}", *obstacle);
  }
  for (const int id : plan_.groups) {
    Group group;
    group.id = id;
    group.name = fmt::format("group-{}", id);
    const std::vector<const ShardPlan*> members = plan_.UniformGroupMembers(id);
    group.compressor = members.front()->compressor;
    group.algorithm = members.front()->algorithm;
    for (const ShardPlan* shard : members) {
      if (plan_.Variable(shard->variable).sparse) {
        sparse_.push_back(SparseMember{shard, group.name + "/" + shard->name});
        continue;
      }
      const int64_t count = tensor::NumElements(shard->shape);
      where_[shard->variable] = {groups_.size(), group.members.size()};
      group.members.push_back(Member{shard, group.padded, count});
      group.elements += count;
      group.padded += Aligned(count);
    }
    if (group.members.empty()) continue;  // only row-sparse variables: nothing to fuse
    group.duration = &observe::ProcessMetrics().all_reduce_duration.With({group.name});
    groups_.push_back(std::move(group));
  }
  inverse_replicas_ = 1.0F / static_cast<float>(total_replicas);
  const float inverse = inverse_replicas_;
  for (size_t r = 0; r < devices.size(); ++r) {
    AD_CHECK(communicators[r] != nullptr, kInternal, "replica {} has no communicator", r);
    auto replica = std::make_unique<Replica>();
    replica->device = devices[r];
    replica->communicator = communicators[r];
    Select(replica->device);
    replica->optimizer = optim::MakeOptimizer(optimizer, replica->device);
    replica->multiply =
        std::make_unique<exec::StandaloneKernel>("Mul", "all-reduce mean", replica->device);
    replica->inverse = Tensor::Scalar(inverse).To(replica->device);
    if (!replica->device.is_cpu()) {
      replica->finite = std::make_unique<exec::DeviceFiniteCheck>(replica->device);
    }
    replica->buffers.resize(groups_.size());
    replica->sparse_inputs.resize(sparse_.size(), nullptr);
    replica->sparse_sums.resize(sparse_.size());
    for (const Group& group : groups_) {
      replica->compressors.push_back(
          group.compressor.kind == compress::CompressorKind::kNone
              ? nullptr
              : compress::MakeFlatCompressor(group.compressor, replica->device.kind));
    }
    replicas_.push_back(std::move(replica));
  }
  if (empty()) return;
  for (size_t r = 0; r < replicas_.size(); ++r) {
    replicas_[r]->thread = std::thread([this, r] { CommunicationLoop(r); });
  }
}

DeviceAllReducePart::~DeviceAllReducePart() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (const auto& replica : replicas_) {
    if (replica->thread.joinable()) replica->thread.join();
  }
}

void DeviceAllReducePart::BeginStep(int64_t step) {
  step_ = step;
  packed_.assign(groups_.size(), {});
  missing_.assign(groups_.size(), 0);
  for (size_t g = 0; g < groups_.size(); ++g) {
    packed_[g].assign(groups_[g].members.size(), false);
    missing_[g] = groups_[g].members.size();
  }
  queued_.assign(groups_.size(), false);
  present_.assign(groups_.size(), {});
}

Tensor& DeviceAllReducePart::Buffer(size_t r, size_t g) {
  Tensor& buffer = replicas_[r]->buffers[g];
  if (!buffer.defined()) {
    buffer = Tensor(tensor::DType::kFloat32, {groups_[g].padded}, replicas_[r]->device);
    buffer.SetZero();  // the padding stays zero, so it sums to zero
  }
  return buffer;
}

void DeviceAllReducePart::Pack(size_t g, size_t m, const std::vector<const Gradient*>& sources) {
  const Member& member = groups_[g].members[m];
  for (size_t r = 0; r < replicas_.size(); ++r) {
    const Gradient& source = *sources[r];
    AD_CHECK(!source.is_sparse() && source.dense.numel() == member.count, kInternal,
             "replica {}'s gradient of '{}' is not the planned dense {} elements", r,
             member.shard->variable, member.count);
    Select(replicas_[r]->device);
    Buffer(r, g).RowsView(member.offset, member.count).CopyFrom(source.dense);
  }
  packed_[g][m] = true;
  --missing_[g];
}

void DeviceAllReducePart::Queue(size_t g) {
  queued_[g] = true;
  observe::Timeline* timeline = observe::ActiveTimeline();
  if (timeline != nullptr) {
    // Marked here, on the thread that packed the buffers, not by the communication thread,
    // which gets to the group only after the earlier groups' reductions: the device's time of
    // this mark is when backward had finished the group (the timeline's device spans).
    for (const auto& replica : replicas_) replica->communicator->DataReady(groups_[g].name);
  }
  for (size_t m = 0; m < groups_[g].members.size(); ++m) {
    if (!packed_[g][m]) continue;
    const Member& member = groups_[g].members[m];
    present_[g].push_back(
        compress::FlatMember{member.shard->name, member.offset, member.shard->shape});
  }
  {
    std::lock_guard lock(mutex_);
    for (const auto& replica : replicas_) replica->queued.push_back(Work{false, g, step_});
  }
  changed_.notify_all();
  if (timeline != nullptr) {
    timeline->Instant("sync", groups_[g].name + " ready", fmt::format(R"("step":{})", step_ + 1));
  }
}

void DeviceAllReducePart::GradientReady(
    int64_t step, int replica, const std::string& variable, const Gradient& gradient,
    const std::vector<std::map<std::string, Gradient>>& earlier) {
  const auto it = where_.find(variable);
  if (it == where_.end()) return;
  std::vector<const Gradient*> sources;
  for (int r = 0; r < replica; ++r) {
    const auto found = earlier[static_cast<size_t>(r)].find(variable);
    if (found == earlier[static_cast<size_t>(r)].end()) return;  // no gradient this step
    sources.push_back(&found->second);
  }
  sources.push_back(&gradient);
  AD_CHECK(sources.size() == replicas_.size(), kInternal,
           "gradients of {} replicas for a part of {}", sources.size(), replicas_.size());
  if (step_ != step) BeginStep(step);
  const auto [g, m] = it->second;
  if (packed_[g][m]) return;
  Pack(g, m, sources);
  if (missing_[g] == 0) Queue(g);
}

void DeviceAllReducePart::CommunicationLoop(size_t r) {
  Replica& replica = *replicas_[r];
  if (observe::Timeline* timeline = observe::ActiveTimeline()) {
    timeline->NameThread(fmt::format("all-reduce {}", r));
  }
  Select(replica.device);  // a compressor's kernels go to this replica's GPU
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !replica.queued.empty(); });
    if (stopping_) return;
    const Work work = replica.queued.front();
    replica.queued.pop_front();
    replica.busy = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      CheckFinite(r, work);
      Reduce(r, work);
    } catch (...) {
      error = std::current_exception();  // rethrown by Synchronize on the training thread
    }
    lock.lock();
    replica.busy = false;
    if (error) {
      // The first error is the cause: kept before the others' calls are ended because of it.
      const bool first = !error_;
      if (first) error_ = error;
      replica.queued.clear();
      // This process's other ranks may be waiting in a collective for this one: end theirs now
      // rather than at their timeout (the worker fails anyway).
      for (size_t other = 0; first && other < replicas_.size(); ++other) {
        if (other != r) replicas_[other]->communicator->Abort(fmt::format("replica {} failed", r));
      }
    }
    changed_.notify_all();
  }
}

void DeviceAllReducePart::CheckFinite(size_t r, const Work& work) {
  Replica& replica = *replicas_[r];
  std::vector<std::pair<const std::string*, Gradient>> gradients;  // variable, gradient (a view)
  if (work.sparse) {
    Gradient gradient;
    gradient.sparse = *replica.sparse_inputs[work.index];
    gradients.emplace_back(&sparse_[work.index].shard->variable, std::move(gradient));
  } else {
    // present_ lists the group's members with a gradient, in member order.
    const Group& group = groups_[work.index];
    size_t m = 0;
    for (const compress::FlatMember& present : present_[work.index]) {
      while (group.members[m].offset != present.offset) ++m;
      Gradient gradient;
      gradient.dense = replica.buffers[work.index].RowsView(present.offset, group.members[m].count);
      gradients.emplace_back(&group.members[m].shard->variable, std::move(gradient));
    }
  }
  if (replica.finite) {
    for (const auto& [variable, gradient] : gradients) replica.finite->Add(gradient);
    if (replica.finite->TakeAllFinite()) return;
  }
  // On the host (the CPU's check, or naming the one the device's check found).
  for (const auto& [variable, gradient] : gradients) {
    if (!exec::GradientFiniteOnHost(gradient)) {
      exec::FailDiverged(work.step + 1,
                         fmt::format("the gradient of '{}' is not finite{}", *variable,
                                     replicas_.size() > 1 ? fmt::format(" (replica {})", r) : ""));
    }
  }
}

void DeviceAllReducePart::Reduce(size_t r, const Work& work) {
  Replica& replica = *replicas_[r];
  const std::string& name = work.sparse ? sparse_[work.index].tag : groups_[work.index].name;
  // One replica's thread times the work and counts its bytes: they are the same on all.
  std::optional<observe::Span> span;
  if (r == 0) {
    span.emplace("sync", [&] {
      return observe::SpanText{(work.sparse ? "gather " : "reduce ") + name,
                               fmt::format(R"("step":{})", work.step + 1)};
    });
  }
  if (work.sparse) {
    GatheredSparse gathered =
        AllGatherSparse(*replica.communicator, *replica.sparse_inputs[work.index], name);
    replica.sparse_sums[work.index] = std::move(gathered.merged);
    if (r == 0) {
      sparse_bytes_ += gathered.local_bytes;
      sparse_sent_ += gathered.sent_bytes;
    }
    return;
  }
  const Group& group = groups_[work.index];
  std::optional<observe::ScopedDuration> timed;
  if (r == 0) timed.emplace(*group.duration);
  if (compress::FlatCompressor* compressor = replica.compressors[work.index].get()) {
    compressor->Reduce(group.name, replica.buffers[work.index], present_[work.index],
                       *replica.communicator, work.step);
  } else {
    replica.communicator->AllReduceSum(
        replica.buffers[work.index].raw(), static_cast<size_t>(group.padded),
        collective::ElementType::kFloat32, group.algorithm, group.name);
    if (r == 0) reduced_bytes_ += group.elements * static_cast<int64_t>(sizeof(float));
  }
}

void DeviceAllReducePart::QueueSparse(
    int64_t step, const std::vector<std::map<std::string, Gradient>>& gradients) {
  sparse_present_.assign(sparse_.size(), false);
  if (sparse_.empty()) return;
  for (size_t s = 0; s < sparse_.size(); ++s) {
    const std::string& variable = sparse_[s].shard->variable;
    // Without a gradient this step (on every replica alike) the table is neither gathered nor
    // applied.
    if (!gradients[0].contains(variable)) continue;
    for (size_t r = 0; r < replicas_.size(); ++r) {
      const Gradient& gradient = gradients[r].at(variable);
      AD_CHECK(gradient.is_sparse(), kInternal,
               "replica {}'s gradient of '{}' is dense; the plan has it row-sparse", r, variable);
      replicas_[r]->sparse_inputs[s] = &*gradient.sparse;
    }
    sparse_present_[s] = true;
  }
  {
    std::lock_guard lock(mutex_);
    for (const auto& replica : replicas_) {
      for (size_t s = 0; s < sparse_.size(); ++s) {
        if (sparse_present_[s]) replica->queued.push_back(Work{true, s, step});
      }
    }
  }
  changed_.notify_all();
}

void DeviceAllReducePart::ApplySparse(const std::vector<Session*>& replicas) {
  for (size_t s = 0; s < sparse_.size(); ++s) {
    if (!sparse_present_[s]) continue;
    const ShardPlan& shard = *sparse_[s].shard;
    for (size_t r = 0; r < replicas_.size(); ++r) {
      Replica& replica = *replicas_[r];
      Select(replica.device);
      // The host path's mean, on the host (the same float products), then to the device.
      Gradient mean;
      mean.sparse = std::move(replica.sparse_sums[s]);
      ScaleGradient(mean, inverse_replicas_);
      Tensor& parameter = replicas[r]->variable(shard.variable);
      replica.optimizer->ApplySparse(shard.name, parameter,
                                     tensor::SparseTo(*mean.sparse, replica.device));
      replica.sparse_inputs[s] = nullptr;
    }
  }
}

void DeviceAllReducePart::WaitIdle() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] {
    for (const auto& replica : replicas_) {
      if (replica->busy || (!replica->queued.empty() && !error_)) return false;
    }
    return true;
  });
  if (error_) {
    std::exception_ptr error = std::exchange(error_, nullptr);
    for (const auto& replica : replicas_) replica->queued.clear();
    std::rethrow_exception(error);
  }
}

void DeviceAllReducePart::Synchronize(int64_t step, double lr,
                                      const std::vector<std::map<std::string, Gradient>>& gradients,
                                      const std::vector<Session*>& replicas) {
  if (empty()) return;
  AD_CHECK(gradients.size() == replicas_.size() && replicas.size() == replicas_.size(), kInternal,
           "{} replicas' gradients for a part of {}", gradients.size(), replicas_.size());
  if (step_ != step) BeginStep(step);
  try {
    // The groups backward did not complete (all of them without overlap), in group order.
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (queued_[g]) continue;
      for (size_t m = 0; m < groups_[g].members.size(); ++m) {
        if (packed_[g][m]) continue;
        const std::string& variable = groups_[g].members[m].shard->variable;
        // Without a gradient this step its place is reduced as it is, and not applied.
        if (!gradients[0].contains(variable)) continue;
        std::vector<const Gradient*> sources;
        sources.reserve(gradients.size());
        for (const auto& replica : gradients) sources.push_back(&replica.at(variable));
        Pack(g, m, sources);
      }
      Queue(g);
    }
    QueueSparse(step, gradients);
    WaitIdle();
  } catch (...) {
    step_ = -1;
    throw;
  }
  const observe::Span span("optimizer", "optimizer");
  for (size_t r = 0; r < replicas_.size(); ++r) {
    Replica& replica = *replicas_[r];
    Select(replica.device);
    replica.optimizer->set_learning_rate(lr);
    std::deque<Tensor> means;  // views of the scaled buffers, kept alive for ApplyAll
    std::vector<optim::DenseUpdate> updates;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const Tensor mean = replica.multiply->Run({&replica.buffers[g], &replica.inverse});
      for (size_t m = 0; m < groups_[g].members.size(); ++m) {
        if (!packed_[g][m]) continue;
        const Member& member = groups_[g].members[m];
        means.push_back(mean.RowsView(member.offset, member.count).Reshaped(member.shard->shape));
        updates.push_back(optim::DenseUpdate{
            &member.shard->name, &replicas[r]->variable(member.shard->variable), &means.back()});
      }
    }
    replica.optimizer->ApplyAll(updates);
  }
  ApplySparse(replicas);
  step_ = -1;
  CountTraffic();
}

void DeviceAllReducePart::CountTraffic() {
  int64_t sent = 0;
  int64_t received = 0;
  for (const auto& replica : replicas_) {
    sent += replica->communicator->bytes_sent();
    received += replica->communicator->bytes_received();
  }
  observe::RuntimeMetrics& metrics = observe::ProcessMetrics();
  metrics.all_reduce_sent_bytes.Inc(static_cast<double>(sent - counted_sent_));
  metrics.all_reduce_received_bytes.Inc(static_cast<double>(received - counted_received_));
  counted_sent_ = sent;
  counted_received_ = received;
}

void DeviceAllReducePart::LoadOptimizerState(const TensorMap& shard_slots) {
  if (shard_slots.empty()) return;
  for (const auto& replica : replicas_) {
    Select(replica->device);
    replica->optimizer->LoadState(shard_slots);
  }
}

void DeviceAllReducePart::CurrentState(Session& replica, TensorMap& shard_values,
                                       TensorMap& shard_slots) const {
  for (const Group& group : groups_) {
    for (const Member& member : group.members) {
      shard_values[member.shard->name] = HostCopy(replica.variable(member.shard->variable));
    }
  }
  for (const SparseMember& member : sparse_) {
    shard_values[member.shard->name] = HostCopy(replica.variable(member.shard->variable));
  }
  Select(replicas_[0]->device);
  for (const auto& [key, value] : replicas_[0]->optimizer->SaveState()) {
    shard_slots[key] = value.To(tensor::Device::Cpu());  // SaveState's are copies already
  }
}

compress::CompressionStats DeviceAllReducePart::Stats() const {
  const int64_t bytes = reduced_bytes_.load();
  compress::CompressionStats total{bytes + sparse_bytes_.load(), bytes + sparse_sent_.load()};
  for (const auto& compressor : replicas_[0]->compressors) {
    if (!compressor) continue;
    const compress::CompressionStats stats = compressor->stats();
    total.raw_bytes += stats.raw_bytes;
    total.wire_bytes += stats.wire_bytes;
  }
  return total;
}

}  // namespace autodist::sync
