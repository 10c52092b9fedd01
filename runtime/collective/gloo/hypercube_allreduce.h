// All-reduce by pairwise exchanges across the dimensions of a hypercube, over the communicator's
// own links (peer_links.h; internal to the Gloo communicator). At step s a rank exchanges with
// the rank whose number differs in bit s. Two shapes:
//
// * recursive doubling: the two swap their whole running sums and both add. log2(n) messages
//   each way of the whole size: the fewest latencies, for small messages.
// * halving-doubling (Rabenseifner's): the two swap halves of their current range and each adds
//   the half it keeps (a reduce-scatter), then the steps run backwards, each sending what it owns
//   (an allgather). 2 log2(n) messages, 2(n-1)/n of the bytes each way: for larger messages.
//
// Both send straight from the caller's data and allgather straight into it; only what is added
// goes through a scratch buffer. Gloo's own halving-doubling copied every message in and out of
// buffers of its own and sent a ready notification before every message.
//
// Every rank ends with the same bits: in recursive doubling each step adds two partial sums and
// addition is commutative; in halving-doubling each element is summed on one rank and copied.
// With n not a power of two, each rank from p = 2^floor(log2 n) up first hands its data to
// rank - p, which adds it before the exchanges and hands the result back after.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/collective/gloo/link_allreduce.h"
#include "runtime/collective/gloo/sum.h"

namespace autodist::collective::gloo_detail {

class PeerLinks;

enum class HypercubeShape { kRecursiveDoubling, kHalvingDoubling };

class HypercubeAllReduce final : public LinkAllReduce {
 public:
  // For `count` elements of `type` on the ranks of `links`, which must outlive it.
  // Halving-doubling needs at least one element per rank of the power of two (MinimumCount).
  HypercubeAllReduce(PeerLinks& links, HypercubeShape shape, size_t count, ElementType type);

  static size_t MinimumCount(HypercubeShape shape, int ranks);

  void Run(void* data) override;

 private:
  using Range = ElementRange;
  struct Step {
    int peer = -1;
    Range kept;   // halving-doubling: what this rank keeps (and later sends back)
    Range given;  // and what it gives away (and later receives)
  };

  PeerLinks& links_;
  const HypercubeShape shape_;
  const size_t count_;
  const size_t element_;
  const SumFunction sum_;
  int folded_from_ = -1;  // the rank beyond the power of two this rank adds for, if any
  int folded_into_ = -1;  // the rank this one (beyond the power of two) hands its data to
  std::vector<Step> steps_;
  std::vector<std::byte> scratch_;
};

}  // namespace autodist::collective::gloo_detail
