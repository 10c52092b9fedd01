// The contributions to one synchronous step of one hosted tensor. Workers' pushes arrive in any
// order; the sum must not depend on it, so contributions are folded in ascending first_replica
// order: the running sum covers replicas [0, next), and a contribution that arrives early waits
// until the ones before it have been added. In the usual case (pushes arriving roughly in rank
// order) at most one sum is held per step instead of one gradient per worker.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ps {

// A gradient as a PS holds it: dense, or row-sparse (then `dense` is unused).
struct PsGradient {
  tensor::Tensor dense;
  std::optional<tensor::SparseGradient> sparse;
  bool is_sparse() const { return sparse.has_value(); }
};

// sum = sum + add, element by element in that order. Reuses the storage of `sum` (it must not be
// shared with anyone who still reads it). Sparse + sparse merges the rows (MergeSparse); a mix
// of sparse and dense gives a dense sum.
void AccumulateGradient(PsGradient& sum, PsGradient add);

// Multiplies every element by `factor`, in place.
void ScaleGradient(PsGradient& gradient, float factor);

// Bytes of a gradient as it travelled: values or rows, plus sparse indices.
int64_t GradientBytes(const PsGradient& gradient);

class StepAccumulator {
 public:
  explicit StepAccumulator(int total_replicas);

  // Throws FailedPrecondition naming `who` when [first_replica, first_replica + replicas)
  // overlaps replicas that already contributed (a repeated push). The range itself must already
  // be within [0, total_replicas).
  void CheckRange(int first_replica, int replicas, const std::string& who) const;

  // Adds a contribution (after CheckRange). `learning_rate` counts only for the contribution
  // that covers replica 0, so the step's rate does not depend on arrival order either.
  void Add(int first_replica, int replicas, double learning_rate, PsGradient gradient);

  // Every replica has contributed.
  bool complete() const { return next_ == total_; }

  // The mean over all replicas: sum × (1 / total_replicas), the rounding of the single-process
  // mean (exec::MeanGradient), so that PS training reproduces it bit for bit. Only when
  // complete; leaves the accumulator empty.
  PsGradient TakeMean();
  double learning_rate() const { return learning_rate_; }

  // "replicas 2, 4-5 of 6 have not pushed", for messages about a step that does not complete.
  std::string DescribeMissing() const;

 private:
  int total_;
  std::map<int, int> arrived_;       // first_replica -> replicas, every contribution so far
  std::map<int, PsGradient> early_;  // contributions waiting for those before them
  std::optional<PsGradient> sum_;    // contributions covering replicas [0, next_)
  int next_ = 0;
  double learning_rate_ = 0;
};

}  // namespace autodist::ps
