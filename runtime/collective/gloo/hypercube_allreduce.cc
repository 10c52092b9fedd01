#include "runtime/collective/gloo/hypercube_allreduce.h"

#include <algorithm>
#include <bit>
#include <span>

#include "runtime/collective/gloo/peer_links.h"
#include "runtime/common/error.h"

namespace autodist::collective::gloo_detail {
namespace {

int PowerOfTwoBelow(int ranks) {
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(ranks)));
}

}  // namespace

size_t HypercubeAllReduce::MinimumCount(HypercubeShape shape, int ranks) {
  return shape == HypercubeShape::kHalvingDoubling ? static_cast<size_t>(PowerOfTwoBelow(ranks))
                                                   : 1;
}

HypercubeAllReduce::HypercubeAllReduce(PeerLinks& links, HypercubeShape shape, size_t count,
                                       ElementType type)
    : links_(links),
      shape_(shape),
      count_(count),
      element_(ElementBytes(type)),
      sum_(SumFor(type)) {
  const int rank = links_.rank();
  const int ranks = links_.size();
  const int pow2 = PowerOfTwoBelow(ranks);
  AD_CHECK(count >= MinimumCount(shape, ranks), kInternal,
           "hypercube all-reduce of {} elements on {} ranks: expected at least {}", count, ranks,
           MinimumCount(shape, ranks));
  const auto bytes = static_cast<int64_t>(count * element_);
  if (rank >= pow2) {
    folded_into_ = rank - pow2;
    bytes_sent_ = bytes_received_ = bytes;
    return;
  }
  size_t scratch_elements = 0;
  if (rank + pow2 < ranks) {
    folded_from_ = rank + pow2;
    scratch_elements = count;
    bytes_sent_ = bytes_received_ = bytes;
  }
  Range current{0, count};
  for (int bit = 1; bit < pow2; bit <<= 1) {
    Step step;
    step.peer = rank ^ bit;
    if (shape_ == HypercubeShape::kRecursiveDoubling) {
      scratch_elements = count;
      bytes_sent_ += bytes;
      bytes_received_ += bytes;
    } else {
      // Both ranks of the pair hold the same range; the one with the bit clear keeps the lower
      // half (the larger, when the range is odd).
      const size_t middle = current.begin + (current.size() + 1) / 2;
      const Range lower{current.begin, middle};
      const Range upper{middle, current.end};
      const bool keeps_upper = (rank & bit) != 0;
      step.kept = keeps_upper ? upper : lower;
      step.given = keeps_upper ? lower : upper;
      current = step.kept;
      scratch_elements = std::max(scratch_elements, step.kept.size());
      // The reduce-scatter sends the given half and receives the kept one; the allgather the
      // reverse.
      const auto moved = static_cast<int64_t>((step.kept.size() + step.given.size()) * element_);
      bytes_sent_ += moved;
      bytes_received_ += moved;
    }
    steps_.push_back(step);
  }
  scratch_.resize(scratch_elements * element_);
}

void HypercubeAllReduce::Run(void* data) {
  if (count_ == 0) return;
  auto* base = static_cast<std::byte*>(data);
  const auto span = [&](Range range) {
    return std::span<std::byte>(base + range.begin * element_, range.size() * element_);
  };
  const Range all{0, count_};
  // Receives `range`'s worth from `peer` into scratch while sending `out` to it, then adds.
  const auto exchange_and_add = [&](int peer, std::span<const std::byte> out, Range range) {
    const std::span<std::byte> in(scratch_.data(), range.size() * element_);
    links_.Exchange(peer, out, peer, in);
    std::byte* at = base + range.begin * element_;
    sum_(at, at, in.data(), range.size());
  };

  if (folded_into_ >= 0) {  // beyond the power of two: hand over, get the result back
    links_.Exchange(folded_into_, span(all), -1, {});
    links_.Exchange(-1, {}, folded_into_, span(all));
    return;
  }
  if (folded_from_ >= 0) {
    const std::span<std::byte> in(scratch_.data(), count_ * element_);
    links_.Exchange(-1, {}, folded_from_, in);
    sum_(base, base, in.data(), count_);
  }
  if (shape_ == HypercubeShape::kRecursiveDoubling) {
    for (const Step& step : steps_) exchange_and_add(step.peer, span(all), all);
  } else {
    for (const Step& step : steps_) exchange_and_add(step.peer, span(step.given), step.kept);
    std::for_each(steps_.rbegin(), steps_.rend(), [&](const Step& step) {
      links_.Exchange(step.peer, span(step.kept), step.peer, span(step.given));
    });
  }
  if (folded_from_ >= 0) links_.Exchange(folded_from_, span(all), -1, {});
}

}  // namespace autodist::collective::gloo_detail
