#include "runtime/ops/math/reduce_sum.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ops/math/elementwise.h"
#include "runtime/ops/parallel.h"

namespace autodist::ops {
namespace {

using tensor::Shape;
using tensor::Tensor;

// A contiguous run is summed in blocks of kSumBlock floats, each block in kLanes independent
// float accumulators (vector registers, so additions overlap instead of waiting on one another)
// and every block total added in double: float rounding stays at the level of a 16-term sum.
constexpr int64_t kLanes = 16;
constexpr int64_t kSumBlock = 256;

double ContiguousSum(const float* p, int64_t n) {
  double total = 0.0;
  int64_t start = 0;
  for (; start + kSumBlock <= n; start += kSumBlock) {
    std::array<float, kLanes> lanes{};
    for (int64_t i = start; i < start + kSumBlock; i += kLanes) {
#pragma omp simd
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += p[i + l];
    }
    float block = 0.0F;
    for (const float lane : lanes) block += lane;
    total += block;
  }
  float rest = 0.0F;
#pragma omp simd reduction(+ : rest)
  for (int64_t i = start; i < n; ++i) rest += p[i];
  return total + rest;
}

// One axis of the collapsed problem: size-1 axes dropped, neighbours that are both summed or
// both kept merged, so every reduction is an alternation such as [kept, summed] (rows) or
// [summed, kept] (columns).
struct Axis {
  int64_t size;
  bool summed;
  int64_t stride = 0;  // in the input, in elements
};

}  // namespace

void SumToKeptShape(const float* x, const Shape& shape, const Shape& kept_shape, float* out,
                    float divisor) {
  AD_CHECK(shape.size() == kept_shape.size(), kInternal,
           "SumToKeptShape: ranks of {} and {} differ", tensor::ShapeToString(shape),
           tensor::ShapeToString(kept_shape));
  const int64_t out_count = tensor::NumElements(kept_shape);
  const auto finish = [divisor](double sum) { return static_cast<float>(sum) / divisor; };
  if (out_count == 0) return;
  if (tensor::NumElements(shape) == 0) {  // sums over nothing
    for (int64_t o = 0; o < out_count; ++o) out[o] = finish(0.0);
    return;
  }
  std::vector<Axis> axes;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    const bool summed = kept_shape[i] == 1;
    if (!axes.empty() && axes.back().summed == summed) {
      axes.back().size *= shape[i];
    } else {
      axes.push_back({shape[i], summed});
    }
  }
  if (axes.empty()) {  // one element in, one out
    out[0] = finish(static_cast<double>(x[0]));
    return;
  }
  int64_t stride = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    axes[i].stride = stride;
    stride *= axes[i].size;
  }
  const bool inner_summed = axes.back().summed;
  const int64_t inner = axes.back().size;
  // Offsets of every combination of the summed axes other than a summed innermost one.
  std::vector<int64_t> summed_offsets{0};
  for (size_t i = 0; i + (inner_summed ? 1 : 0) < axes.size(); ++i) {
    if (!axes[i].summed) continue;
    std::vector<int64_t> next;
    next.reserve(summed_offsets.size() * static_cast<size_t>(axes[i].size));
    for (const int64_t base : summed_offsets) {
      for (int64_t j = 0; j < axes[i].size; ++j) next.push_back(base + j * axes[i].stride);
    }
    summed_offsets = std::move(next);
  }
  // The kept axes outside the innermost, to locate an output row in the input.
  std::vector<const Axis*> outer_kept;
  for (size_t i = 0; i + 1 < axes.size(); ++i) {
    if (!axes[i].summed) outer_kept.push_back(&axes[i]);
  }
  const auto input_offset = [&](int64_t row) {
    int64_t offset = 0;
    for (size_t i = outer_kept.size(); i-- > 0;) {
      offset += (row % outer_kept[i]->size) * outer_kept[i]->stride;
      row /= outer_kept[i]->size;
    }
    return offset;
  };
  const auto terms = static_cast<int64_t>(summed_offsets.size());

  if (inner_summed) {
    if (out_count == 1) {
      // Everything into one value (all summed axes merged into `inner`): split the contiguous
      // run across threads.
      const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(NumThreads(), inner >> 16));
      std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
      ParallelFor(chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          const int64_t lo = inner * c / chunks;
          const int64_t hi = inner * (c + 1) / chunks;
          partial[static_cast<size_t>(c)] = ContiguousSum(x + lo, hi - lo);
        }
      });
      double total = 0.0;
      for (const double p : partial) total += p;
      out[0] = finish(total);
      return;
    }
    // Each output sums `terms` contiguous runs of `inner` elements.
    ParallelFor(out_count, std::max<int64_t>(1, kElementwiseGrain / (inner * terms)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t o = begin; o < end; ++o) {
                    const float* base = x + input_offset(o);
                    double total = 0.0;
                    for (const int64_t r : summed_offsets) total += ContiguousSum(base + r, inner);
                    out[o] = finish(total);
                  }
                });
    return;
  }
  // The innermost axis is kept: each output row accumulates `terms` contiguous input rows.
  // With fewer rows than threads (a bias gradient: [N, C] -> [C]), rows are also split into
  // column slices so that every thread gets work.
  const int64_t rows = out_count / inner;
  int64_t width = inner;
  if (rows < NumThreads()) {
    const int64_t slices = (NumThreads() + rows - 1) / rows;
    width = std::max<int64_t>(256, (inner + slices - 1) / slices);
  }
  const int64_t slices = (inner + width - 1) / width;
  ParallelFor(rows * slices, std::max<int64_t>(1, kElementwiseGrain / (width * terms)),
              [&](int64_t begin, int64_t end) {
                std::vector<double> acc(static_cast<size_t>(width));
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t row = item / slices;
                  const int64_t j0 = (item % slices) * width;
                  const int64_t w = std::min(width, inner - j0);
                  const float* base = x + input_offset(row) + j0;
                  double* a = acc.data();
                  std::fill(a, a + w, 0.0);
                  for (const int64_t r : summed_offsets) {
                    const float* p = base + r;
#pragma omp simd
                    for (int64_t j = 0; j < w; ++j) a[j] += p[j];
                  }
                  float* o = out + row * inner + j0;
                  for (int64_t j = 0; j < w; ++j) o[j] = finish(a[j]);
                }
              });
}

Tensor SumToShape(const Tensor& grad, const Shape& target) {
  if (grad.shape() == target) return grad;
  AD_CHECK(target.size() <= grad.rank(), kInternal, "cannot sum a gradient of shape {} to {}",
           tensor::ShapeToString(grad.shape()), tensor::ShapeToString(target));
  // The target right-aligned against the gradient: its kept shape.
  Shape kept(grad.rank() - target.size(), 1);
  kept.insert(kept.end(), target.begin(), target.end());
  for (size_t i = 0; i < kept.size(); ++i) {
    AD_CHECK(kept[i] == grad.dim(i) || kept[i] == 1, kInternal,
             "cannot sum a gradient of shape {} to {}", tensor::ShapeToString(grad.shape()),
             tensor::ShapeToString(target));
  }
  if (tensor::NumElements(kept) == grad.numel()) return grad.Reshaped(target);
  Tensor out(tensor::DType::kFloat32, target);
  SumToKeptShape(grad.data<float>(), grad.shape(), kept, out.data<float>());
  return out;
}

}  // namespace autodist::ops
