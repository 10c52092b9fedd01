#include "runtime/ps/accumulator.h"

#include <fmt/format.h>

#include <iterator>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::ps {
namespace {

using tensor::Tensor;

void AddDense(Tensor& sum, const Tensor& add) {
  float* out = sum.data<float>();
  const float* in = add.data<float>();
  for (int64_t i = 0; i < sum.numel(); ++i) out[i] += in[i];
}

// sum[row] += rows of `add`, row by row.
void AddRows(Tensor& sum, const tensor::SparseGradient& add) {
  const int64_t n = add.indices.numel();
  if (n == 0) return;
  const int64_t width = add.values.numel() / n;
  const int64_t* indices = add.indices.data<int64_t>();
  const float* rows = add.values.data<float>();
  float* out = sum.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    float* dst = out + indices[i] * width;
    for (int64_t k = 0; k < width; ++k) dst[k] += rows[i * width + k];
  }
}

}  // namespace

void AccumulateGradient(PsGradient& sum, PsGradient add) {
  if (sum.is_sparse() && add.is_sparse()) {
    sum.sparse =
        tensor::MergeSparse(std::vector<const tensor::SparseGradient*>{&*sum.sparse, &*add.sparse});
    return;
  }
  if (sum.is_sparse()) {
    sum.dense = tensor::Densify(*sum.sparse);
    sum.sparse.reset();
  }
  if (add.is_sparse()) {
    AddRows(sum.dense, *add.sparse);
  } else {
    AD_CHECK(sum.dense.shape() == add.dense.shape(), kInternal,
             "adding gradients of shapes {} and {}", tensor::ShapeToString(sum.dense.shape()),
             tensor::ShapeToString(add.dense.shape()));
    AddDense(sum.dense, add.dense);
  }
}

void ScaleGradient(PsGradient& gradient, float factor) {
  Tensor& values = gradient.is_sparse() ? gradient.sparse->values : gradient.dense;
  float* data = values.data<float>();
  for (int64_t i = 0; i < values.numel(); ++i) data[i] *= factor;
}

int64_t GradientBytes(const PsGradient& gradient) {
  if (!gradient.is_sparse()) return static_cast<int64_t>(gradient.dense.nbytes());
  return static_cast<int64_t>(gradient.sparse->values.nbytes() + gradient.sparse->indices.nbytes());
}

StepAccumulator::StepAccumulator(int total_replicas) : total_(total_replicas) {}

void StepAccumulator::CheckRange(int first_replica, int replicas, const std::string& who) const {
  // The contribution starting at or after first_replica must start past this one's end, and the
  // one starting before it must end at or before its start.
  const int end = first_replica + replicas;
  auto next = arrived_.lower_bound(first_replica);
  const bool overlaps_next = next != arrived_.end() && next->first < end;
  const bool overlaps_previous =
      next != arrived_.begin() && std::prev(next)->first + std::prev(next)->second > first_replica;
  AD_CHECK(!overlaps_next && !overlaps_previous, kFailedPrecondition,
           "{}: {} pushed to this step already; a push is not retried", who,
           replicas == 1 ? fmt::format("replica {}", first_replica)
                         : fmt::format("replicas {}-{}", first_replica, end - 1));
}

void StepAccumulator::Add(int first_replica, int replicas, double learning_rate,
                          PsGradient gradient) {
  arrived_.emplace(first_replica, replicas);
  if (first_replica == 0) learning_rate_ = learning_rate;
  early_.emplace(first_replica, std::move(gradient));
  // Fold every contribution that is now contiguous with the sum.
  for (auto it = early_.find(next_); it != early_.end(); it = early_.find(next_)) {
    if (sum_) {
      AccumulateGradient(*sum_, std::move(it->second));
    } else {
      sum_ = std::move(it->second);
    }
    next_ += arrived_.at(it->first);
    early_.erase(it);
  }
}

PsGradient StepAccumulator::TakeMean() {
  AD_CHECK(complete() && sum_.has_value(), kInternal, "taking the mean of an incomplete step ({})",
           DescribeMissing());
  PsGradient mean = std::move(*sum_);
  sum_.reset();
  // exec::MeanGradient multiplies by the float inverse, and leaves a single replica untouched.
  if (total_ > 1) ScaleGradient(mean, 1.0F / static_cast<float>(total_));
  return mean;
}

std::string StepAccumulator::DescribeMissing() const {
  std::vector<std::pair<int, int>> missing;  // [first, end) ranges not covered
  int covered_to = 0;
  for (const auto& [first, count] : arrived_) {
    if (first > covered_to) missing.emplace_back(covered_to, first);
    covered_to = first + count;
  }
  if (covered_to < total_) missing.emplace_back(covered_to, total_);
  if (missing.empty()) return fmt::format("all {} replicas have pushed", total_);
  if (arrived_.empty()) return fmt::format("no replica of {} has pushed", total_);
  std::string list;
  for (const auto& [first, end] : missing) {
    if (!list.empty()) list += ", ";
    list += end - first == 1 ? fmt::format("{}", first) : fmt::format("{}-{}", first, end - 1);
  }
  const bool one = missing.size() == 1 && missing[0].second - missing[0].first == 1;
  return fmt::format("replica{} {} of {} {} not pushed", one ? "" : "s", list, total_,
                     one ? "has" : "have");
}

}  // namespace autodist::ps
