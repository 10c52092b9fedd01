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
  // AllReduceAlgorithm::kAuto runs recursive doubling up to auto_recursive_doubling_max_bytes,
  // halving-doubling above, and the ring from auto_ring_min_bytes on. Defaults (none): the
  // functions below, from where the ranks sit.
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
  // Halving-doubling runs in pieces of at most this many bytes (at most 2 GiB). Default 1 MiB: as
  // fast as one exchange up to 4 MiB, up to 1.4x faster above; 256 KiB pieces were slower.
  size_t halving_doubling_piece_bytes = size_t{1} << 20;
  // The ring moves data in segments of at most this many bytes, two in flight. Default 1 MiB
  // (Gloo's default).
  size_t ring_segment_bytes = size_t{1} << 20;
};

// Up to where kAuto runs recursive doubling (`configured` where one was given). It sends the whole
// message at each of log2(p) steps, halving-doubling 2(p-1)/p of it in twice the steps, p the
// power of two at or below the rank count; with p <= 2 the bytes are the same. So 64 KiB, where
// the two tied on loopback (2 and 4 ranks), except where p >= 4 and the ranks span hosts: on a
// link the bytes cost more than the steps, and 8 KiB sits between 4 KiB (1 Gbit/s, 4 ranks:
// recursive doubling 69% of the link, halving-doubling 52%) and 16 KiB (72% and 95%).
inline constexpr size_t kLocalRecursiveDoublingMaxBytes = size_t{64} << 10;
inline constexpr size_t kNetworkRecursiveDoublingMaxBytes = size_t{8} << 10;
size_t AutoRecursiveDoublingMaxBytes(std::optional<size_t> configured, int ranks,
                                     int distinct_hosts);

// From where kAuto hands all-reduces to the ring (`configured` where one was given): from
// kNetworkRingMinBytes where each rank sits on a host of its own (as many distinct hostnames as
// ranks) and the rank count is not a power of two. There halving-doubling's extra ranks fold into
// partners whose links then carry twice the bytes (1 Gbit/s, 3 ranks: 45% of the link against
// the ring's 95%). Elsewhere never: halving-doubling reached 95% of a 1 Gbit/s link on 4 ranks
// as the ring did, and beat it everywhere on one host and unshaped (docs/performance.md).
inline constexpr size_t kNetworkRingMinBytes = size_t{1} << 20;
size_t AutoRingMinBytes(std::optional<size_t> configured, int ranks, int distinct_hosts);

// Connects this rank to the others: blocks until every rank has published its address and the
// connections are up. Throws kInvalidArgument for bad options (a rank outside [0, size), no
// store, a hostname it cannot listen on), kUnavailable when the others do not show up within the
// timeout (errors of the store keep their codes).
std::unique_ptr<Communicator> MakeGlooCommunicator(const GlooOptions& options);

}  // namespace autodist::collective
