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
// Abort from another thread shuts the communicator's own links down: a collective running on them
// fails at once naming the reason; one inside Gloo's algorithms (the ring, broadcast, barrier)
// at its timeout.
// The process ignores SIGPIPE from the first communicator on (unless it installed a handler):
// otherwise a write to a peer that died would kill it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  // AllReduceAlgorithm::kAuto runs recursive doubling up to auto_recursive_doubling_max_bytes
  // (default: AutoRecursiveDoublingMaxBytes below, from where the ranks sit), then
  // AutoAlgorithmAbove, and the ring from auto_ring_min_bytes on (default: never).
  std::optional<size_t> auto_recursive_doubling_max_bytes;
  std::optional<size_t> auto_ring_min_bytes;
  // How long a rank waiting for a peer in recursive doubling or halving-doubling keeps polling
  // (yielding the CPU between tries) before it sleeps until the data arrives. 0: sleep at once.
  // Default 50 us: 2 ranks, 4 KiB: 17 -> 7 us per all-reduce; 4 ranks on 2 cores: 70 -> 33 us.
  std::chrono::microseconds exchange_spin{50};
  // TCP congestion controls the links of those two algorithms ask for, in order; the first the
  // kernel lets this process set wins (unprivileged processes get those in
  // net.ipv4.tcp_allowed_congestion_control), none: the system's default. BBR without the fq
  // qdisc paces with timers: on loopback, 2 ranks, half the speed one run in two (peer_links.h).
  std::vector<std::string> link_congestion_control = {"cubic", "reno"};
  // Halving-doubling and the direct all-reduce run in pieces of at most this many bytes (at most
  // 2 GiB). Default 1 MiB: 256 KiB and 2-16 MiB pieces were as fast or slower (2 and 4 ranks).
  size_t halving_doubling_piece_bytes = size_t{1} << 20;
  // The ring moves data in segments of at most this many bytes, two in flight. Default 1 MiB
  // (Gloo's default).
  size_t ring_segment_bytes = size_t{1} << 20;
};

// Up to where kAuto runs recursive doubling (`configured` where one was given). It sends the whole
// message at each of log2(p) steps (p the power of two at or below the rank count, the others
// folding in), where halving-doubling and the direct all-reduce send 2(n-1)/n of it. With 2 ranks
// the bytes are the same; on one host the steps cost more than the bytes, and the algorithms tied
// at 64 KiB (2 and 4 ranks). Where the ranks span hosts (and are more than 2) the bytes cost
// more: 8 KiB, between 4 KiB (1 Gbit/s, 4 ranks: recursive doubling 69% of the link,
// halving-doubling 52%) and 16 KiB (72% and 95%).
inline constexpr size_t kLocalRecursiveDoublingMaxBytes = size_t{64} << 10;
inline constexpr size_t kNetworkRecursiveDoublingMaxBytes = size_t{8} << 10;
size_t AutoRecursiveDoublingMaxBytes(std::optional<size_t> configured, int ranks,
                                     int distinct_hosts);

// Above recursive doubling's range kAuto runs halving-doubling where the rank count is a power of
// two, else the direct all-reduce: halving-doubling's extra ranks fold into partners whose links
// then carry twice the bytes (1 Gbit/s, 3 ranks: 45% of the link, the direct all-reduce 95%, as
// Gloo's ring). It never runs the ring unless auto_ring_min_bytes says so: halving-doubling and
// the direct all-reduce filled shaped links as the ring did and beat it on one host and
// unshaped (docs/performance.md).
AllReduceAlgorithm AutoAlgorithmAbove(int ranks);

// Connects this rank to the others: blocks until every rank has published its address and the
// connections are up. Throws kInvalidArgument for bad options (a rank outside [0, size), no
// store, a hostname it cannot listen on), kUnavailable when the others do not show up within the
// timeout (errors of the store keep their codes).
std::unique_ptr<Communicator> MakeGlooCommunicator(const GlooOptions& options);

}  // namespace autodist::collective
