#include "runtime/ps/store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <set>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/observe/timeline.h"
#include "runtime/optim/optimizer.h"

namespace autodist::ps {

namespace internal {

struct HostedState {
  HostedTensor spec;
  tensor::Shape shape;
  mutable std::mutex mutex;
  mutable std::condition_variable cv;  // notified on every update and on shutdown
  // Guarded by `mutex`:
  std::shared_ptr<tensor::Tensor> value;  // shared with snapshots; updated in place when not
  int64_t version = 0;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::map<int64_t, StepAccumulator> pending;  // sync: contributions of steps not applied yet
  // Sparse tensors only: the version each row last changed at, and the last version at which
  // every row changed, so that a worker holding version h can be sent the rows changed after h.
  std::vector<int64_t> row_changed;
  int64_t all_rows_changed = 0;
  // The rows each recent update changed, by version, oldest first and without gaps up to
  // `version`: a worker a few versions behind gets the union of a few short lists instead of a
  // scan of row_changed. Holds at most as many rows in all as the tensor has; an update that
  // changes every row empties it.
  std::deque<std::pair<int64_t, std::vector<int64_t>>> recent;
  size_t recent_rows = 0;
};

}  // namespace internal

namespace {

using internal::HostedState;
using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

// A reply of changed rows carries all their indices in its first piece, whose metadata both
// transports cap at 64 MiB: at up to 10 bytes per index, 4M indices stay well under it. More
// changed rows than that go as the whole value, in pieces.
constexpr int64_t kMostChangedRowsPerReply = int64_t{1} << 22;

// How often a waiter checks whether its caller went away; an update or Shutdown wakes it sooner.
constexpr auto kPollInterval = std::chrono::milliseconds(50);

int64_t MillisSince(PsStore::Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(PsStore::Clock::now() - start)
      .count();
}

bool IsCancelled(const PsStore::Cancelled& cancelled) { return cancelled && cancelled(); }

// One optimizer update of `hosted` (locked).
void Update(HostedState& hosted, const PsGradient& gradient, double learning_rate) {
  const observe::Span span("optimizer", [&] {
    return observe::SpanText{"apply " + hosted.spec.name,
                             fmt::format(R"("version":{})", hosted.version + 1)};
  });
  observe::RuntimeMetrics& metrics = observe::ProcessMetrics();
  const observe::ScopedDuration timed(metrics.ps_apply_duration);
  metrics.ps_updates.Inc();
  // A reply may still be streaming the current value: leave it to the reply, update a copy.
  if (hosted.value.use_count() > 1) hosted.value = std::make_shared<Tensor>(hosted.value->Clone());
  hosted.optimizer->set_learning_rate(learning_rate);
  if (gradient.is_sparse()) {
    hosted.optimizer->ApplySparse(hosted.spec.name, *hosted.value, *gradient.sparse);
  } else {
    hosted.optimizer->Apply(hosted.spec.name, *hosted.value, gradient.dense);
  }
  ++hosted.version;
  if (hosted.spec.sparse) {
    if (gradient.is_sparse() && hosted.optimizer->SparseUpdatesChangeOnlyPresentRows()) {
      const tensor::Tensor& indices = gradient.sparse->indices;
      const auto* row = indices.data<int64_t>();
      for (int64_t i = 0; i < indices.numel(); ++i) {
        hosted.row_changed[static_cast<size_t>(row[i])] = hosted.version;
      }
      hosted.recent.emplace_back(hosted.version, std::vector<int64_t>(row, row + indices.numel()));
      hosted.recent_rows += static_cast<size_t>(indices.numel());
      while (hosted.recent_rows > hosted.row_changed.size()) {
        hosted.recent_rows -= hosted.recent.front().second.size();
        hosted.recent.pop_front();
      }
    } else {
      hosted.all_rows_changed = hosted.version;
      hosted.recent.clear();
      hosted.recent_rows = 0;
    }
  }
  hosted.cv.notify_all();
}

// The rows of `hosted` (locked) changed after `held`, copied: nullopt when the whole value is
// due instead (PsStore::WaitForVersion says when).
std::optional<tensor::SparseGradient> ChangedRows(const HostedState& hosted, uint64_t incarnation,
                                                  const HeldVersion& held) {
  if (!hosted.spec.sparse || held.incarnation != incarnation || held.version > hosted.version ||
      held.version < hosted.all_rows_changed) {
    return std::nullopt;
  }
  const Tensor& value = *hosted.value;
  const int64_t rows = hosted.shape[0];
  const int64_t row_bytes = rows == 0 ? 0 : static_cast<int64_t>(value.nbytes()) / rows;
  // Rows and their indices must come to fewer bytes than the value to be worth sending, and the
  // indices must fit in the one piece's metadata that carries them (under 64 MiB as varints).
  const int64_t most =
      std::min(static_cast<int64_t>(value.nbytes()) / (row_bytes + 8), kMostChangedRowsPerReply);
  std::vector<int64_t> changed;
  if (held.version == hosted.version) {
    // Up to date: no rows.
  } else if (!hosted.recent.empty() && hosted.recent.front().first <= held.version + 1) {
    // Every version after the held one is in the log.
    for (auto it = hosted.recent.rbegin(); it != hosted.recent.rend() && it->first > held.version;
         ++it) {
      changed.insert(changed.end(), it->second.begin(), it->second.end());
    }
    std::sort(changed.begin(), changed.end());
    changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
    if (static_cast<int64_t>(changed.size()) > most) return std::nullopt;
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      if (hosted.row_changed[static_cast<size_t>(r)] <= held.version) continue;
      if (static_cast<int64_t>(changed.size()) == most) return std::nullopt;
      changed.push_back(r);
    }
  }
  Tensor values = tensor::GatherRows(value, changed);
  return tensor::SparseGradient{
      Tensor::FromVector<int64_t>({static_cast<int64_t>(changed.size())}, changed),
      std::move(values), hosted.shape};
}

// What a waiter gets of `hosted` (locked): the rows changed since `held` when they will do,
// else the whole value.
PsSnapshot SnapshotFor(const HostedState& hosted, uint64_t incarnation,
                       const std::optional<HeldVersion>& held) {
  if (held) {
    if (std::optional<tensor::SparseGradient> rows = ChangedRows(hosted, incarnation, *held)) {
      return {hosted.version, nullptr, std::move(rows)};
    }
  }
  return {hosted.version, hosted.value, std::nullopt};
}

// Applies every complete step that is next in order (`hosted` locked).
void ApplyReadySteps(HostedState& hosted) {
  for (auto it = hosted.pending.find(hosted.version);
       it != hosted.pending.end() && it->second.complete();
       it = hosted.pending.find(hosted.version)) {
    StepAccumulator step = std::move(it->second);
    hosted.pending.erase(it);
    const PsGradient mean = step.TakeMean();
    Update(hosted, mean, step.learning_rate());
  }
}

// What the step a waiter depends on is missing (`hosted` locked).
std::string DescribePending(const HostedState& hosted, int total_replicas) {
  if (!hosted.spec.sync) return "asynchronous";
  const auto it = hosted.pending.find(hosted.version);
  return fmt::format("step {}: {}", hosted.version,
                     it == hosted.pending.end()
                         ? fmt::format("no replica of {} has pushed", total_replicas)
                         : it->second.DescribeMissing());
}

void CheckSparseIndices(const std::string& who, const std::string& name,
                        const tensor::SparseGradient& gradient, int64_t rows) {
  const Tensor& indices = gradient.indices;
  AD_CHECK(indices.dtype() == DType::kInt64 && indices.rank() == 1 &&
               indices.numel() == gradient.values.dim(0),
           kInvalidArgument, "{}: sparse gradient of '{}' needs {} int64 row indices, got {} {}",
           who, name, gradient.values.dim(0), tensor::DTypeName(indices.dtype()),
           tensor::ShapeToString(indices.shape()));
  const auto* index = indices.data<int64_t>();
  for (int64_t i = 0; i < indices.numel(); ++i) {
    AD_CHECK(index[i] >= 0 && index[i] < rows, kInvalidArgument,
             "{}: sparse gradient of '{}' has row index {} outside [0, {})", who, name, index[i],
             rows);
    AD_CHECK(i == 0 || index[i] > index[i - 1], kInvalidArgument,
             "{}: sparse gradient of '{}' must have unique ascending row indices, got {} after {}",
             who, name, index[i], index[i - 1]);
  }
}

}  // namespace

PsStore::PsStore() = default;
PsStore::~PsStore() = default;

void PsStore::Init(PsInitRequest request) {
  AD_CHECK(!initialized(), kFailedPrecondition,
           "Init: the parameter server is already initialized; the chief sends Init once");
  AD_CHECK(!request.tensors.empty(), kInvalidArgument, "Init: no tensors to host");
  AD_CHECK(request.num_workers >= 1, kInvalidArgument, "Init: num_workers must be >= 1, got {}",
           request.num_workers);
  AD_CHECK(request.total_replicas >= 1, kInvalidArgument,
           "Init: total_replicas must be >= 1, got {}", request.total_replicas);
  AD_CHECK(request.start_step >= 0, kInvalidArgument, "Init: start_step must be >= 0, got {}",
           request.start_step);
  const optim::OptimizerOptions options =
      optim::ParseOptimizerOptions(request.optimizer, request.optimizer_options);

  // "<tensor>/<slot>": the slot follows the last '/', since shard names contain '/' themselves.
  std::map<std::string, std::map<std::string, Tensor>> state_of;
  for (auto& [key, slot] : request.optimizer_state) {
    const size_t slash = key.rfind('/');
    AD_CHECK(slash != std::string::npos && slash > 0 && slash + 1 < key.size(), kInvalidArgument,
             "Init: optimizer state key '{}' is not '<tensor>/<slot>'", key);
    state_of[key.substr(0, slash)].emplace(key, std::move(slot));
  }

  std::map<std::string, std::unique_ptr<HostedState>> hosted;
  for (const HostedTensor& spec : request.tensors) {
    AD_CHECK(!spec.name.empty(), kInvalidArgument, "Init: a hosted tensor has no name");
    AD_CHECK(!hosted.contains(spec.name), kInvalidArgument, "Init: tensor '{}' is listed twice",
             spec.name);
    AD_CHECK(spec.staleness >= 0, kInvalidArgument,
             "Init: tensor '{}': staleness must be >= 0, got {}", spec.name, spec.staleness);
    AD_CHECK(spec.sync || spec.staleness == 0, kInvalidArgument,
             "Init: tensor '{}' is asynchronous; staleness applies to synchronous tensors only, "
             "got {}",
             spec.name, spec.staleness);
    const auto value = request.values.find(spec.name);
    AD_CHECK(value != request.values.end(), kInvalidArgument,
             "Init: no initial value for tensor '{}'", spec.name);
    AD_CHECK(value->second.dtype() == DType::kFloat32, kInvalidArgument,
             "Init: tensor '{}' must be float32, got {}", spec.name,
             tensor::DTypeName(value->second.dtype()));
    AD_CHECK(!spec.sparse || value->second.rank() >= 1, kInvalidArgument,
             "Init: sparse tensor '{}' needs at least one dimension (rows), got shape {}",
             spec.name, tensor::ShapeToString(value->second.shape()));
    auto state = std::make_unique<HostedState>();
    state->spec = spec;
    state->shape = value->second.shape();
    state->value = std::make_shared<Tensor>(std::move(value->second));
    state->version = request.start_step;
    if (spec.sparse) {
      state->row_changed.assign(static_cast<size_t>(state->shape[0]), request.start_step);
      state->all_rows_changed = request.start_step;
    }
    state->optimizer = optim::MakeOptimizer(options);
    if (const auto slots = state_of.find(spec.name); slots != state_of.end()) {
      for (const auto& [key, slot] : slots->second) {
        // The optimizer would only notice a wrong buffer shape at the first update.
        AD_CHECK(slot.dtype() != DType::kFloat32 || slot.shape() == state->shape, kInvalidArgument,
                 "Init: optimizer state '{}' has shape {}, tensor '{}' has {}", key,
                 tensor::ShapeToString(slot.shape()), spec.name,
                 tensor::ShapeToString(state->shape));
      }
      state->optimizer->LoadState(slots->second);
      state_of.erase(slots);
    }
    hosted.emplace(spec.name, std::move(state));
  }
  for (const auto& [name, unused] : request.values) {
    AD_CHECK(hosted.contains(name), kInvalidArgument,
             "Init: a value for tensor '{}', which is not in the hosted list", name);
  }
  if (!state_of.empty()) {
    Fail(ErrorCode::kInvalidArgument,
         "Init: optimizer state '{}' belongs to tensor '{}', which is not in the hosted list",
         state_of.begin()->second.begin()->first, state_of.begin()->first);
  }

  // Drawn before any state changes: random_device may throw.
  std::random_device random;
  const uint64_t incarnation = (static_cast<uint64_t>(random()) << 32U | random()) | 1U;  // not 0
  std::lock_guard lock(init_mutex_);
  AD_CHECK(!initialized(), kFailedPrecondition,
           "Init: the parameter server is already initialized; the chief sends Init once");
  hosted_ = std::move(hosted);
  num_workers_ = request.num_workers;
  total_replicas_ = request.total_replicas;
  start_step_ = request.start_step;
  incarnation_ = incarnation;
  initialized_.store(true, std::memory_order_release);
  init_cv_.notify_all();
}

void PsStore::WaitInitialized(Clock::time_point deadline, const Cancelled& cancelled) const {
  const auto start = Clock::now();
  std::unique_lock lock(init_mutex_);
  while (!initialized()) {
    AD_CHECK(!shutdown_.load(), kUnavailable, "the parameter server is shutting down");
    AD_CHECK(!IsCancelled(cancelled), kUnavailable,
             "the call was cancelled while waiting for Init");
    const auto now = Clock::now();
    AD_CHECK(now < deadline, kFailedPrecondition,
             "the parameter server has not been initialized after waiting {} ms (the chief sends "
             "Init before the first step)",
             MillisSince(start));
    init_cv_.wait_until(lock, std::min(deadline, now + kPollInterval));
  }
}

HostedState& PsStore::Find(const std::string& who, const std::string& name) const {
  AD_CHECK(initialized(), kFailedPrecondition, "{}: the parameter server is not initialized", who);
  const auto it = hosted_.find(name);
  if (it == hosted_.end()) {
    Fail(ErrorCode::kNotFound, "{}: this parameter server does not host tensor '{}'; it hosts {}",
         who, name, ListHosted());
  }
  return *it->second;
}

std::string PsStore::ListHosted() const {
  constexpr size_t kListed = 10;  // shards can be many; the first few make the point
  std::string list;
  size_t listed = 0;
  for (const auto& [name, unused] : hosted_) {
    if (listed == kListed) break;
    list += fmt::format("{}'{}'", listed == 0 ? "" : ", ", name);
    ++listed;
  }
  if (hosted_.size() > kListed) list += fmt::format(" and {} more", hosted_.size() - kListed);
  return list;
}

void PsStore::CheckGradientHeader(int worker, const std::string& name, DType dtype,
                                  const Shape& dims, bool sparse) const {
  const std::string who = fmt::format("worker {}", worker);
  const HostedState& hosted = Find(who, name);
  AD_CHECK(dtype == DType::kFloat32, kInvalidArgument,
           "{}: gradient of '{}' must be float32, got {}", who, name, tensor::DTypeName(dtype));
  if (!sparse) {
    AD_CHECK(dims == hosted.shape, kInvalidArgument,
             "{}: gradient of '{}' has shape {}, expected {}", who, name,
             tensor::ShapeToString(dims), tensor::ShapeToString(hosted.shape));
    return;
  }
  AD_CHECK(hosted.spec.sparse, kInvalidArgument,
           "{}: gradient of '{}' is row-sparse, but the tensor is not declared sparse (push it "
           "dense)",
           who, name);
  Shape expected = hosted.shape;
  expected[0] = dims.empty() ? 0 : dims[0];
  AD_CHECK(dims == expected, kInvalidArgument,
           "{}: sparse gradient of '{}' has rows of shape {}, expected {} (rows of a {} tensor)",
           who, name, tensor::ShapeToString(dims), tensor::ShapeToString(expected),
           tensor::ShapeToString(hosted.shape));
  AD_CHECK(dims[0] <= hosted.shape[0], kInvalidArgument,
           "{}: sparse gradient of '{}' has {} rows, more than the tensor's {} (rows are unique)",
           who, name, dims[0], hosted.shape[0]);
}

std::map<std::string, int64_t> PsStore::Push(PsPush push) {
  const std::string who = fmt::format("worker {} step {}", push.worker, push.step);
  AD_CHECK(initialized(), kFailedPrecondition, "{}: the parameter server is not initialized", who);
  AD_CHECK(push.worker >= 0 && push.worker < num_workers_, kInvalidArgument,
           "{}: worker rank outside [0, {})", who, num_workers_);
  AD_CHECK(push.replicas >= 1 && push.first_replica >= 0 &&
               push.first_replica <= total_replicas_ - push.replicas,
           kInvalidArgument, "{}: replicas {}..{} are not within the job's {} replicas", who,
           push.first_replica, push.first_replica + push.replicas - 1, total_replicas_);
  AD_CHECK(push.step >= 0, kInvalidArgument, "{}: the step must be >= 0", who);
  AD_CHECK(std::isfinite(push.learning_rate) && push.learning_rate >= 0, kInvalidArgument,
           "{}: learning rate must be a finite number >= 0, got {}", who, push.learning_rate);

  // Content first, without locks: hosted shapes never change.
  std::vector<HostedState*> targets;
  for (auto& [name, gradient] : push.gradients) {
    HostedState& hosted = Find(who, name);
    if (gradient.is_sparse()) {
      CheckGradientHeader(push.worker, name, gradient.sparse->values.dtype(),
                          gradient.sparse->values.shape(), true);
      CheckSparseIndices(who, name, *gradient.sparse, hosted.shape[0]);
      gradient.sparse->dense_shape = hosted.shape;
    } else {
      CheckGradientHeader(push.worker, name, gradient.dense.dtype(), gradient.dense.shape(), false);
    }
    targets.push_back(&hosted);
  }

  // push.gradients is ordered by name, so the locks are taken in name order.
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(targets.size());
  for (HostedState* hosted : targets) locks.emplace_back(hosted->mutex);
  for (const HostedState* hosted : targets) {
    if (!hosted->spec.sync) continue;
    const std::string& name = hosted->spec.name;
    AD_CHECK(push.step >= hosted->version, kFailedPrecondition,
             "{}: tensor '{}' has applied step {} already (it is at version {}); a push is not "
             "retried",
             who, name, push.step, hosted->version);
    AD_CHECK(push.step <= hosted->version + hosted->spec.staleness, kFailedPrecondition,
             "{}: tensor '{}' waits for step {} and allows {} step(s) ahead (staleness); step {} "
             "is too far ahead",
             who, name, hosted->version, hosted->spec.staleness, push.step);
    if (const auto step = hosted->pending.find(push.step); step != hosted->pending.end()) {
      step->second.CheckRange(push.first_replica, push.replicas,
                              fmt::format("{}: tensor '{}'", who, name));
    }
  }

  std::map<std::string, int64_t> wait_for;
  size_t index = 0;
  for (auto& [name, gradient] : push.gradients) {
    HostedState& hosted = *targets[index++];
    if (hosted.spec.sync) {
      auto step = hosted.pending.try_emplace(push.step, total_replicas_).first;
      step->second.Add(push.first_replica, push.replicas, push.learning_rate, std::move(gradient));
      ApplyReadySteps(hosted);
      wait_for.emplace(name, push.step + 1 - hosted.spec.staleness);
    } else {
      // Applied alone: the mean over its own replicas.
      if (push.replicas > 1) ScaleGradient(gradient, 1.0F / static_cast<float>(push.replicas));
      Update(hosted, gradient, push.learning_rate);
      wait_for.emplace(name, hosted.version);
    }
  }
  pushes_.fetch_add(1);
  return wait_for;
}

PsSnapshot PsStore::WaitForVersion(const std::string& name, int64_t version,
                                   Clock::time_point deadline, const Cancelled& cancelled,
                                   const std::string& who,
                                   const std::optional<HeldVersion>& held) const {
  const HostedState& hosted = Find(who, name);
  const auto start = Clock::now();
  std::unique_lock lock(hosted.mutex);
  if (hosted.version >= version) return SnapshotFor(hosted, incarnation_, held);
  const observe::ScopedGaugeIncrement waiting(observe::ProcessMetrics().ps_waiting_calls);
  while (hosted.version < version) {
    AD_CHECK(!shutdown_.load(), kUnavailable,
             "{}: the parameter server is shutting down while tensor '{}' waits for version {}",
             who, name, version);
    AD_CHECK(!IsCancelled(cancelled), kUnavailable,
             "{}: the call was cancelled while tensor '{}' waits for version {}", who, name,
             version);
    const auto now = Clock::now();
    if (now >= deadline) {
      Fail(ErrorCode::kUnavailable,
           "{}: tensor '{}' did not reach version {} within {} ms; it is at version {}, {}", who,
           name, version, MillisSince(start), hosted.version,
           DescribePending(hosted, total_replicas_));
    }
    hosted.cv.wait_until(lock, std::min(deadline, now + kPollInterval));
  }
  return SnapshotFor(hosted, incarnation_, held);
}

PsPullSnapshot PsStore::Snapshot(const std::vector<std::string>& names,
                                 bool optimizer_state) const {
  AD_CHECK(initialized(), kFailedPrecondition, "Pull: the parameter server is not initialized");
  std::vector<const HostedState*> targets;  // name order, so locks are taken in name order
  if (names.empty()) {
    for (const auto& [name, hosted] : hosted_) targets.push_back(hosted.get());
  } else {
    for (const std::string& name : std::set<std::string>(names.begin(), names.end())) {
      targets.push_back(&Find("Pull", name));
    }
  }
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(targets.size());
  for (const HostedState* hosted : targets) locks.emplace_back(hosted->mutex);
  PsPullSnapshot out;
  for (const HostedState* hosted : targets) {
    out.tensors.emplace(hosted->spec.name,
                        PsSnapshot{hosted->version, hosted->value, std::nullopt});
    if (optimizer_state) out.optimizer_state.merge(hosted->optimizer->SaveState());
  }
  return out;
}

PsStats PsStore::Stats() const {
  PsStats stats;
  stats.pushes = pushes_.load();
  if (!initialized()) return stats;
  bool first = true;
  for (const auto& [name, hosted] : hosted_) {
    std::lock_guard lock(hosted->mutex);
    stats.version = first ? hosted->version : std::min(stats.version, hosted->version);
    stats.updates += hosted->version - start_step_;
    first = false;
  }
  stats.steps = stats.version - start_step_;
  return stats;
}

void PsStore::Shutdown() {
  shutdown_.store(true);
  // Notified under each lock, so that no waiter can check the flag and then miss the wake-up.
  {
    std::lock_guard lock(init_mutex_);
    init_cv_.notify_all();
  }
  if (!initialized()) return;
  for (const auto& [name, hosted] : hosted_) {
    std::lock_guard lock(hosted->mutex);
    hosted->cv.notify_all();
  }
}

}  // namespace autodist::ps
