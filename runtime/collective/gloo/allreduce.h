// The two all-reduce algorithms of the Gloo communicator (internal to it): Gloo's ring, and
// Gloo's halving-doubling. Runs no checks of its own: the communicator has verified that every
// rank calls with the same tag, count, type and algorithm, which is what keeps the ranks'
// sequences of Gloo operations (and so Gloo's slot numbers) identical.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "runtime/collective/communicator.h"

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

class AllReducer {
 public:
  // `collectives`: the context the ring (Gloo's newer, option-based API) runs on.
  // `algorithms`: a context of its own for Gloo's algorithm objects. Sharing one context (one set
  // of connections) between the two APIs slows the option-based collectives down a
  // hundredfold once an algorithm object has registered its buffers (seen with Gloo 0.5:
  // a 4 MiB ring on 3 ranks went from 10 ms to 3 s, all of it waiting).
  AllReducer(std::shared_ptr<gloo::Context> collectives, std::shared_ptr<gloo::Context> algorithms);
  ~AllReducer();
  AllReducer(const AllReducer&) = delete;
  AllReducer& operator=(const AllReducer&) = delete;

  // Reduce-scatter then allgather around the ring, in segments of at most `segment_bytes`
  // pipelined two at a time: sends 2(n-1)/n of the bytes, the least any algorithm can.
  void Ring(void* data, size_t count, ElementType type, size_t segment_bytes);

  // Recursive halving (reduce-scatter) then doubling (allgather): log2(n) steps instead of the
  // ring's 2(n-1), so it wins where latency dominates. Runs in pieces of at most `piece_bytes`,
  // one after the other: on loopback, pieces of 1 MiB are as fast as one exchange up to 4 MiB
  // and up to 1.4x faster above, and they bound the copy kept per tag. Gloo's algorithm object
  // registers its buffers once, so one is built per (tag, piece size, type) on first use and
  // reused; it works on a buffer of its own, into and out of which each piece is copied (the
  // caller's pointer may change between calls, and the ranks must build their objects in the same
  // order). Memory: at most two pieces per tag, plus Gloo's own buffers of the same size.
  void HalvingDoubling(void* data, size_t count, ElementType type, const std::string& tag,
                       size_t piece_bytes);

 private:
  struct Cached;
  Cached& HalvingDoublingFor(const std::string& tag, size_t count, ElementType type);

  using Key = std::tuple<std::string, size_t, ElementType>;

  std::shared_ptr<gloo::Context> collectives_;
  std::shared_ptr<gloo::Context> algorithms_;
  std::map<Key, std::unique_ptr<Cached>> halving_doubling_;
};

}  // namespace autodist::collective::gloo_detail
