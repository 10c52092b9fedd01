#include "runtime/collective/gloo/allreduce.h"

#include <gloo/allreduce.h>
#include <gloo/types.h>

#include <algorithm>
#include <utility>

#include "runtime/collective/gloo/direct_allreduce.h"
#include "runtime/collective/gloo/peer_links.h"
#include "runtime/collective/gloo/sum.h"

namespace autodist::collective::gloo_detail {
namespace {

template <typename T>
void SetRingOutput(gloo::AllreduceOptions& options, void* data, size_t count) {
  options.setOutput(static_cast<T*>(data), count);
}

}  // namespace

AllReducer::AllReducer(std::shared_ptr<gloo::Context> collectives, PeerLinks& links)
    : collectives_(std::move(collectives)), links_(links) {}

AllReducer::~AllReducer() = default;

Traffic AllReducer::Ring(void* data, size_t count, ElementType type, size_t segment_bytes) {
  gloo::AllreduceOptions options(collectives_);
  options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  switch (type) {
    case ElementType::kFloat32:
      SetRingOutput<float>(options, data, count);
      break;
    case ElementType::kFloat16:
      SetRingOutput<gloo::float16>(options, data, count);
      break;
    case ElementType::kInt64:
      SetRingOutput<int64_t>(options, data, count);
      break;
  }
  options.setReduceFunction(SumFor(type));
  options.setTag(kDataTag);
  options.setMaxSegmentSize(segment_bytes);
  gloo::allreduce(options);
  // Around the ring, both ways: 2(n-1)/n of the bytes.
  const auto ranks = static_cast<size_t>(collectives_->size);
  const auto share = static_cast<int64_t>(2 * (ranks - 1) * count * ElementBytes(type) / ranks);
  return {share, share};
}

Traffic AllReducer::HalvingDoubling(void* data, size_t count, ElementType type,
                                    const std::string& tag, size_t piece_bytes) {
  return OnLinks(data, count, type, tag, AllReduceAlgorithm::kHalvingDoubling, piece_bytes);
}

Traffic AllReducer::RecursiveDoubling(void* data, size_t count, ElementType type,
                                      const std::string& tag) {
  return OnLinks(data, count, type, tag, AllReduceAlgorithm::kRecursiveDoubling,
                 kRecursiveDoublingPieceBytes);
}

Traffic AllReducer::Direct(void* data, size_t count, ElementType type, const std::string& tag,
                           size_t piece_bytes) {
  return OnLinks(data, count, type, tag, AllReduceAlgorithm::kDirect, piece_bytes);
}

Traffic AllReducer::OnLinks(void* data, size_t count, ElementType type, const std::string& tag,
                            AllReduceAlgorithm algorithm, size_t piece_bytes) {
  const size_t element = ElementBytes(type);
  const size_t piece = std::max<size_t>(1, piece_bytes / element);
  auto* bytes = static_cast<std::byte*>(data);
  Traffic traffic;
  for (size_t offset = 0; offset < count; offset += piece) {
    const size_t length = std::min(piece, count - offset);
    // Too few elements to give every rank (of the power of two) one: recursive doubling.
    const size_t minimum =
        algorithm == AllReduceAlgorithm::kDirect ? DirectAllReduce::MinimumCount(links_.size())
        : algorithm == AllReduceAlgorithm::kHalvingDoubling
            ? HypercubeAllReduce::MinimumCount(HypercubeShape::kHalvingDoubling, links_.size())
            : 1;
    const AllReduceAlgorithm fits =
        length >= minimum ? algorithm : AllReduceAlgorithm::kRecursiveDoubling;
    Cached& cached = cached_[Key(tag, fits, type, length == piece)];
    if (cached.all_reduce == nullptr || cached.count != length) {
      cached.all_reduce = nullptr;  // its scratch goes before the next one's comes
      if (fits == AllReduceAlgorithm::kDirect) {
        cached.all_reduce = std::make_unique<DirectAllReduce>(links_, length, type);
      } else {
        cached.all_reduce = std::make_unique<HypercubeAllReduce>(
            links_,
            fits == AllReduceAlgorithm::kHalvingDoubling ? HypercubeShape::kHalvingDoubling
                                                         : HypercubeShape::kRecursiveDoubling,
            length, type);
      }
      cached.count = length;
    }
    cached.all_reduce->Run(bytes + offset * element);
    traffic.sent += cached.all_reduce->bytes_sent();
    traffic.received += cached.all_reduce->bytes_received();
  }
  return traffic;
}

}  // namespace autodist::collective::gloo_detail
