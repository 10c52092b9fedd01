// The state of one parameter server, without gRPC: the hosted tensors with their values,
// versions and optimizers, the contributions of synchronous steps not yet complete, and the
// waits on versions that replies depend on. docs/parameter-servers.md states the semantics.
//
// Thread-safe. Every hosted tensor has its own lock and its own optimizer (optimizer state is
// per tensor anyway), so pushes to different tensors are folded and applied in parallel. A call
// that locks several tensors locks them in name order.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ps/accumulator.h"
#include "runtime/ps/types.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ps {

namespace internal {
struct HostedState;  // one hosted tensor: value, version, optimizer, pending steps, lock
}  // namespace internal

// One worker's push to this PS: the content of a Step RPC.
struct PsPush {
  int worker = 0;
  int first_replica = 0;
  int replicas = 1;
  int64_t step = 0;
  double learning_rate = 0;
  // Gradient SUMS over the covered replicas. The store takes ownership and reuses their storage
  // for sums and means: pass Clone()s of tensors the caller keeps using. A sparse gradient's
  // dense_shape is filled in from the hosted tensor.
  std::map<std::string, PsGradient> gradients;
};

// A hosted tensor's value at some version. Never modified: an update that finds the value still
// referenced by a snapshot writes into a copy (copy-on-write), so a reply streams its snapshot
// without holding any lock and without copying when no update intervenes.
//
// For a worker that holds an earlier version of a sparse tensor (HeldVersion), the snapshot may
// instead carry only the rows that changed since: `changed` is then set (copies of those rows at
// `version`, their indices ascending) and `value` is null.
struct PsSnapshot {
  int64_t version = 0;
  std::shared_ptr<const tensor::Tensor> value;
  std::optional<tensor::SparseGradient> changed;

  // What a reply of it carries: the value's bytes, or the rows' plus 8 per row index.
  int64_t ReplyBytes() const {
    if (!changed) return static_cast<int64_t>(value->nbytes());
    return static_cast<int64_t>(changed->values.nbytes()) + changed->indices.numel() * 8;
  }
};

struct PsPullSnapshot {
  std::map<std::string, PsSnapshot> tensors;
  std::map<std::string, tensor::Tensor> optimizer_state;  // "<tensor>/<slot>"
};

class PsStore {
 public:
  using Clock = std::chrono::steady_clock;
  // Polled while waiting: true when the caller has gone away (its RPC was cancelled).
  using Cancelled = std::function<bool()>;

  PsStore();
  ~PsStore();
  PsStore(const PsStore&) = delete;
  PsStore& operator=(const PsStore&) = delete;

  // Hosts `request.tensors` with their initial values (moved in, not copied) and optional
  // optimizer state. Throws InvalidArgument naming the tensor or option for a malformed request
  // (duplicate or empty name, negative staleness or staleness of an async tensor, a missing,
  // unknown or non-float32 value, state of an unknown tensor or of the wrong shape, a bad
  // optimizer), FailedPrecondition when already initialized. Nothing is hosted unless all is
  // valid.
  void Init(PsInitRequest request);
  bool initialized() const { return initialized_.load(std::memory_order_acquire); }

  // Blocks until Init. Throws FailedPrecondition when `deadline` passes first, Unavailable on
  // Shutdown or when `cancelled` says so.
  void WaitInitialized(Clock::time_point deadline, const Cancelled& cancelled) const;

  // Checks a gradient's announcement before its bytes arrive, so a wrong or oversized gradient
  // is rejected before anything is allocated: NotFound for a tensor this PS does not host,
  // InvalidArgument for a non-float32 type, a dense shape or sparse row shape that differs from
  // the hosted tensor, more sparse rows than the tensor has, or sparse rows for a tensor not
  // declared sparse. `dims` are the rows' dims for sparse gradients.
  void CheckGradientHeader(int worker, const std::string& name, tensor::DType dtype,
                           const tensor::Shape& dims, bool sparse) const;

  // Validates a push completely, then records it (all or nothing): the header (worker rank,
  // replica range within total_replicas, step, learning rate) and every gradient (as
  // CheckGradientHeader, plus sparse indices unique, ascending and in range); for sync tensors
  // the step must be neither applied already nor more than `staleness` steps ahead, and its
  // replicas must not have contributed to it before (FailedPrecondition). Sync contributions are
  // folded and complete steps applied in step order; async gradients are applied at once.
  // Returns, per pushed tensor, the version its reply waits for: step + 1 - staleness (sync),
  // the version after this push's own update (async).
  std::map<std::string, int64_t> Push(PsPush push);

  // Blocks until tensor `name` reaches `version`, then returns a snapshot of its value. Throws
  // Unavailable naming `who`, the tensor and the replicas missing from the step it waits for
  // when `deadline` passes, on Shutdown, or when `cancelled` says so.
  //
  // With `held` (what the caller already has of the tensor), the snapshot carries only the rows
  // changed since, when the tensor is sparse, `held` is of this store's incarnation and no later
  // than the snapshot, no update since changed every row (a dense gradient, or an optimizer that
  // moves absent rows: optim::Optimizer::SparseUpdatesChangeOnlyPresentRows) and the rows with
  // their indices are fewer bytes than the value. Otherwise the whole value, as without.
  PsSnapshot WaitForVersion(const std::string& name, int64_t version, Clock::time_point deadline,
                            const Cancelled& cancelled, const std::string& who,
                            const std::optional<HeldVersion>& held = std::nullopt) const;

  // A random number drawn at Init: versions a worker holds are comparable only within one
  // incarnation (a server restarted from a checkpoint counts versions again). 0 before Init.
  uint64_t incarnation() const { return incarnation_; }

  // A consistent snapshot of `names` (every hosted tensor when empty) and, when asked, their
  // optimizer state: all taken under the tensors' locks at once. NotFound for an unknown name.
  PsPullSnapshot Snapshot(const std::vector<std::string>& names, bool optimizer_state) const;

  // Version, steps, updates and pushes (bytes are the service's to count).
  PsStats Stats() const;

  // Wakes every waiter; waits and later calls that would wait fail with Unavailable.
  void Shutdown();

 private:
  // The hosted tensor `name`; `who` prefixes the error (NotFound, listing the hosted tensors).
  internal::HostedState& Find(const std::string& who, const std::string& name) const;
  std::string ListHosted() const;

  // Written once by Init (under init_mutex_, before initialized_ is set), read-only afterwards;
  // each tensor's mutable state is guarded by its own lock.
  std::map<std::string, std::unique_ptr<internal::HostedState>> hosted_;
  int num_workers_ = 0;
  int total_replicas_ = 0;
  int64_t start_step_ = 0;
  uint64_t incarnation_ = 0;

  mutable std::mutex init_mutex_;
  mutable std::condition_variable init_cv_;
  std::atomic<bool> initialized_{false};
  std::atomic<bool> shutdown_{false};
  std::atomic<int64_t> pushes_{0};
};

}  // namespace autodist::ps
