// The all-reduce algorithms of the Gloo communicator (internal to it): Gloo's ring, and our
// halving-doubling and recursive doubling (hypercube_allreduce.h). Runs no checks of its own: the
// communicator has verified that every rank calls with the same tag, count, type and algorithm,
// which is what keeps the ranks' sequences of Gloo operations (and so Gloo's slot numbers)
// identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "runtime/collective/communicator.h"
#include "runtime/collective/gloo/hypercube_allreduce.h"

namespace gloo {
class Context;
}

namespace autodist::collective::gloo_detail {

// Gloo's tags for the communicator's own operations: collectives carry kDataTag, the size check
// kCheckTag, so that ranks which disagree about whether to check cannot mix the two up (they time
// out instead); kCloseTag marks the barrier before the connections close.
constexpr uint32_t kDataTag = 0;
constexpr uint32_t kCheckTag = 1;
constexpr uint32_t kCloseTag = 2;

// Recursive doubling runs in pieces of at most this many bytes, which bounds its scratch buffer
// (kAuto runs it on small messages only).
constexpr size_t kRecursiveDoublingPieceBytes = size_t{256} << 10;

// Bytes one all-reduce sent and received on this rank.
struct Traffic {
  int64_t sent = 0;
  int64_t received = 0;
};

class AllReducer {
 public:
  // `collectives`: the context the ring (Gloo's option-based API) runs on. `links`: the
  // connections of the hypercube algorithms; must outlive this.
  AllReducer(std::shared_ptr<gloo::Context> collectives, PeerLinks& links);
  ~AllReducer();
  AllReducer(const AllReducer&) = delete;
  AllReducer& operator=(const AllReducer&) = delete;

  // Reduce-scatter then allgather around the ring, in segments of at most `segment_bytes`
  // pipelined two at a time: sends 2(n-1)/n of the bytes, the least any algorithm can.
  Traffic Ring(void* data, size_t count, ElementType type, size_t segment_bytes);

  // Recursive halving (reduce-scatter) then doubling (allgather), hypercube_allreduce.h: log2(n)
  // steps each way instead of the ring's 2(n-1), so it wins where latency dominates. Runs in
  // pieces of at most `piece_bytes`, one after the other, which bound the scratch buffer. Messages
  // with fewer elements than the hypercube has ranks run recursive doubling instead.
  Traffic HalvingDoubling(void* data, size_t count, ElementType type, const std::string& tag,
                          size_t piece_bytes);

  // Swaps of whole running sums (hypercube_allreduce.h): one message each way per step, the
  // fewest latencies, for small messages. In pieces of kRecursiveDoublingPieceBytes.
  Traffic RecursiveDoubling(void* data, size_t count, ElementType type, const std::string& tag);

  // Reduce-scatter then allgather by direct messages (direct_allreduce.h): two steps at any rank
  // count. In pieces of `piece_bytes`; messages with fewer elements than ranks run recursive
  // doubling instead.
  Traffic Direct(void* data, size_t count, ElementType type, const std::string& tag,
                 size_t piece_bytes);

 private:
  // (tag, algorithm, type, whether the piece is a whole one): a message's whole pieces share one
  // object and its remainder has another.
  using Key = std::tuple<std::string, AllReduceAlgorithm, ElementType, bool>;
  struct Cached {
    size_t count = 0;  // elements the object was built for
    std::unique_ptr<LinkAllReduce> all_reduce;
  };

  // In pieces of `piece_bytes`. The objects are kept with their scratch buffers (at most one
  // piece), so a tag's all-reduces of a steady size build nothing after the first; a remainder
  // whose size changes is rebuilt, which keeps at most two objects per tag, algorithm and type
  // whatever sizes a tag sees.
  Traffic OnLinks(void* data, size_t count, ElementType type, const std::string& tag,
                  AllReduceAlgorithm algorithm, size_t piece_bytes);

  std::shared_ptr<gloo::Context> collectives_;
  PeerLinks& links_;
  std::map<Key, Cached> cached_;
};

}  // namespace autodist::collective::gloo_detail
