#include "runtime/collective/gloo/direct_allreduce.h"

#include <span>

#include "runtime/common/error.h"

namespace autodist::collective::gloo_detail {

DirectAllReduce::DirectAllReduce(PeerLinks& links, size_t count, ElementType type)
    : links_(links), element_(ElementBytes(type)), sum_(SumFor(type)) {
  const auto ranks = static_cast<size_t>(links_.size());
  const auto rank = static_cast<size_t>(links_.rank());
  AD_CHECK(count >= MinimumCount(links_.size()), kInternal,
           "direct all-reduce of {} elements on {} ranks: expected at least one per rank", count,
           ranks);
  // The first count % ranks shares take one element more.
  size_t begin = 0;
  for (size_t r = 0; r < ranks; ++r) {
    const size_t size = count / ranks + (r < count % ranks ? 1 : 0);
    shares_.push_back({begin, begin + size});
    begin += size;
  }
  const size_t mine = shares_[rank].size();
  scratch_.resize((ranks - 1) * mine * element_);
  sends_.reserve(ranks - 1);
  receives_.reserve(ranks - 1);
  const auto others = static_cast<int64_t>((count - mine) * element_);
  const auto own = static_cast<int64_t>(mine * element_ * (ranks - 1));
  bytes_sent_ = others + own;      // the others' shares, then this rank's to each
  bytes_received_ = own + others;  // this rank's share from each, then the others'
}

void DirectAllReduce::Run(void* data) {
  auto* base = static_cast<std::byte*>(data);
  const int ranks = links_.size();
  const int rank = links_.rank();
  const Share mine = shares_[static_cast<size_t>(rank)];
  const size_t mine_bytes = mine.size() * element_;
  const auto share_of = [&](int r) {
    const Share share = shares_[static_cast<size_t>(r)];
    return std::span<std::byte>(base + share.begin * element_, share.size() * element_);
  };
  // The peers' parts of this rank's share, in rank order without this rank's own.
  const auto scratch_of = [&](int r) {
    const auto slot = static_cast<size_t>(r < rank ? r : r - 1);
    return std::span<std::byte>(scratch_.data() + slot * mine_bytes, mine_bytes);
  };

  std::vector<PeerLinks::Send>& sends = sends_;
  std::vector<PeerLinks::Receive>& receives = receives_;
  sends.clear();
  receives.clear();
  // Reduce-scatter: each peer gets its share of this rank's data; this rank gets its share of
  // each peer's.
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == rank) continue;
    sends.push_back({peer, share_of(peer)});
    receives.push_back({peer, scratch_of(peer)});
  }
  links_.ExchangeAll(sends, receives);
  std::byte* at = base + mine.begin * element_;
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer != rank) sum_(at, at, scratch_of(peer).data(), mine.size());
  }
  // Allgather: this rank's sum to each peer, each peer's sum into its share here.
  sends.clear();
  receives.clear();
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer == rank) continue;
    sends.push_back({peer, share_of(rank)});
    receives.push_back({peer, share_of(peer)});
  }
  links_.ExchangeAll(sends, receives);
}

}  // namespace autodist::collective::gloo_detail
