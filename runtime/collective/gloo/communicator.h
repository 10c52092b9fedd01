// Collectives on CPU over TCP with Gloo (https://github.com/facebookincubator/gloo), behind the
// Communicator interface. The ranks find each other through a rendezvous store: in a job the
// coordinator's (coordinator_gloo_store.h); in tests gloo's HashStore, in the benchmark its
// FileStore. Gloo's types stay out of this header.
//
// Failures: every collective has the timeout below. A peer that dies or stops taking part makes
// the others fail within it with autodist::Error kUnavailable naming the collective and tag,
// never hang; after such a failure the communicator is unusable (later calls throw
// kFailedPrecondition) and the job has to start over. A call whose sizes differ across ranks
// throws kInvalidArgument on every rank (see Communicator) and leaves the communicator usable.
// The process ignores SIGPIPE from the first communicator on (unless it installed a handler):
// otherwise a write to a peer that died would kill it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/collective/communicator.h"

namespace gloo::rendezvous {
class Store;
}

namespace autodist::collective {

struct GlooOptions {
  int rank = 0;
  int size = 1;
  // Where the ranks publish their addresses and read the others'. Required.
  std::shared_ptr<gloo::rendezvous::Store> store;
  // The address of this host's interface that the other ranks reach this rank at.
  std::string hostname = "127.0.0.1";
  // Limit on connecting (the whole rendezvous) and on each collective. Default 60 s: a rank may be
  // busy that long between collectives, e.g. checkpointing.
  std::chrono::milliseconds timeout{60000};
  // Prefix of the store keys: communicators sharing a store need distinct prefixes.
  std::string prefix;
  // AllReduceAlgorithm::kAuto runs halving-doubling below this many bytes and the ring from here
  // on. Default (none): AutoRingMinBytes below, from where the ranks sit.
  std::optional<size_t> auto_ring_min_bytes;
  // Below the ring's range, kAuto runs recursive doubling up to this many bytes and
  // halving-doubling above.
  size_t auto_recursive_doubling_max_bytes = size_t{64} << 10;
  // How long a rank waiting for a peer in recursive doubling or halving-doubling keeps polling
  // (yielding the CPU between tries) before it sleeps until the data arrives. 0: sleep at once.
  // Default 50 us: 2 ranks, 4 KiB: 17 -> 7 us per all-reduce; 4 ranks on 2 cores: 70 -> 33 us.
  std::chrono::microseconds exchange_spin{50};
  // Halving-doubling runs in pieces of at most this many bytes (at most 2 GiB). Default 1 MiB: as
  // fast as one exchange up to 4 MiB, up to 1.4x faster above; 256 KiB pieces were slower.
  size_t halving_doubling_piece_bytes = size_t{1} << 20;
  // The ring moves data in segments of at most this many bytes, two in flight. Default 1 MiB
  // (Gloo's default).
  size_t ring_segment_bytes = size_t{1} << 20;
};

// Where kAuto hands all-reduces to the ring (auto_ring_min_bytes above; `configured` where one was
// given). Where at least 3 ranks each sit on a host of their own (as many distinct hostnames as
// ranks): from kNetworkRingMinBytes, since on links of 1 and 2.5 Gbit/s the ring's pipelined
// segments kept 4 ranks at 90-96% of the link from 4 MiB up, where halving-doubling's exchanges,
// one after the other, reached 73-77% (docs/performance.md, "Collectives on emulated networks").
// Elsewhere never: on one host (loopback, 2 to 4 ranks) halving-doubling beat the ring at every
// size from 4 KiB to 256 MiB, and 2 ranks exchange once either way.
inline constexpr size_t kNetworkRingMinBytes = size_t{1} << 20;
size_t AutoRingMinBytes(std::optional<size_t> configured, int ranks, int distinct_hosts);

// Connects this rank to the others: blocks until every rank has published its address and the
// connections are up. Throws kInvalidArgument for bad options (a rank outside [0, size), no
// store, a hostname it cannot listen on), kUnavailable when the others do not show up within the
// timeout (errors of the store keep their codes).
std::unique_ptr<Communicator> MakeGlooCommunicator(const GlooOptions& options);

}  // namespace autodist::collective
