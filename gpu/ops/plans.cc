// The host side of the broadcast and reduction launches: their index plans and scratch sizes.
#include <algorithm>
#include <string>

#include "gpu/ops/launch.h"
#include "runtime/common/error.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::gpu::detail {

BroadcastPlan PlanBroadcast(const tensor::Shape& a, const tensor::Shape& b,
                            const tensor::Shape& out, const std::string& what) {
  const std::vector<int64_t> a_strides = tensor::BroadcastStrides(a, out);
  const std::vector<int64_t> b_strides = tensor::BroadcastStrides(b, out);
  BroadcastPlan plan;
  plan.n = tensor::NumElements(out);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t dim = out[i];
    if (dim == 1) continue;
    const int last = plan.rank - 1;
    // Merge with the previous axis where both operands stay contiguous across the two.
    if (last >= 0 && plan.a_strides[last] == a_strides[i] * dim &&
        plan.b_strides[last] == b_strides[i] * dim) {
      plan.dims[last] *= dim;
      plan.a_strides[last] = a_strides[i];
      plan.b_strides[last] = b_strides[i];
      continue;
    }
    AD_CHECK(plan.rank < kMaxRank, kInvalidArgument,
             "{}: broadcasting {} and {} to {} needs more than {} axes on the GPU", what,
             tensor::ShapeToString(a), tensor::ShapeToString(b), tensor::ShapeToString(out),
             kMaxRank);
    plan.dims[plan.rank] = dim;
    plan.a_strides[plan.rank] = a_strides[i];
    plan.b_strides[plan.rank] = b_strides[i];
    ++plan.rank;
  }
  return plan;
}

SumPlan PlanSumToShape(const tensor::Shape& from, const tensor::Shape& target,
                       const std::string& what) {
  // Strides of `target` within `from` (0 where it was broadcast), and `from`'s own strides.
  const std::vector<int64_t> target_strides = tensor::BroadcastStrides(target, from);
  const std::vector<int64_t> from_strides = tensor::Strides(from);
  SumPlan plan;
  plan.outputs = tensor::NumElements(target);
  plan.reduced_count = 1;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == 1) continue;
    const bool reduced = target_strides[i] == 0;
    int& rank = reduced ? plan.reduced_rank : plan.kept_rank;
    AD_CHECK(rank < kMaxRank, kInvalidArgument,
             "{}: summing {} to {} needs more than {} axes on the GPU", what,
             tensor::ShapeToString(from), tensor::ShapeToString(target), kMaxRank);
    if (reduced) {
      plan.reduced_dims[rank] = from[i];
      plan.reduced_strides[rank] = from_strides[i];
      plan.reduced_count *= from[i];
    } else {
      plan.kept_dims[rank] = from[i];
      plan.kept_strides[rank] = from_strides[i];
    }
    ++rank;
  }
  return plan;
}

int64_t ChannelSumScratch(const ChannelLayout& layout, const std::string& what) {
  AD_CHECK(layout.channels <= kMaxChannels, kInvalidArgument,
           "{}: {} channels, more than the {} the CUDA kernels take", what, layout.channels,
           kMaxChannels);
  return 2 * layout.channels * ChannelSumSlices(layout);
}

}  // namespace autodist::gpu::detail
