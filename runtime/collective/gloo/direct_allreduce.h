// All-reduce in two rounds of direct messages, on the communicator's own links (internal to the
// Gloo communicator). The data is cut into one share per rank. In the first round every rank
// sends each other rank that rank's share and adds the shares it receives into its own (a
// reduce-scatter); in the second it sends its summed share to every other rank, straight into
// their data (an allgather). Each rank sends and receives 2(n-1)/n of the bytes, as in the ring
// and halving-doubling, but in two steps at any rank count, the n-1 messages of a step in flight
// at once, and with no rank folding into another when n is no power of two.
//
// Each share is summed on its owner only (its own part first, then the others' in rank order)
// and copied to the others, so every rank ends with the same bits.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/collective/gloo/link_allreduce.h"
#include "runtime/collective/gloo/peer_links.h"
#include "runtime/collective/gloo/sum.h"

namespace autodist::collective::gloo_detail {

class DirectAllReduce final : public LinkAllReduce {
 public:
  // For `count` elements of `type` (at least one per rank: MinimumCount) on the ranks of
  // `links`, which must outlive it.
  DirectAllReduce(PeerLinks& links, size_t count, ElementType type);

  static size_t MinimumCount(int ranks) { return static_cast<size_t>(ranks); }

  void Run(void* data) override;

 private:
  using Share = ElementRange;  // the elements one rank sums

  PeerLinks& links_;
  const size_t element_;
  const SumFunction sum_;
  std::vector<Share> shares_;       // by rank
  std::vector<std::byte> scratch_;  // the others' parts of this rank's share, in rank order
  // A step's messages, kept so that a run allocates nothing.
  std::vector<PeerLinks::Send> sends_;
  std::vector<PeerLinks::Receive> receives_;
};

}  // namespace autodist::collective::gloo_detail
