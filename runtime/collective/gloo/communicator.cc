#include "runtime/collective/gloo/communicator.h"

#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/collective/call_check.h"
#include "runtime/collective/gloo/allreduce.h"
#include "runtime/collective/gloo/peer_links.h"
#include "runtime/collective/gloo/store_adapter.h"
#include "runtime/collective/gloo/sum.h"
#include "runtime/collective/registry.h"
#include "runtime/common/error.h"
#include "runtime/common/sigpipe.h"

namespace autodist::collective {
namespace {

using detail::CallSignature;
using detail::Collective;

// Longest the closing barrier waits (see ~GlooCommunicator).
constexpr std::chrono::milliseconds kCloseTimeout{5000};

double Seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

// Gloo's messages start with its source location ("[./gloo/transport/tcp/pair.cc:598] "); ours
// name the call instead.
std::string GlooMessage(const std::exception& error) {
  std::string_view message = error.what();
  if (message.starts_with('[')) {
    const size_t end = message.find("] ");
    if (end != std::string_view::npos) message.remove_prefix(end + 2);
  }
  return std::string(message);
}

// Payload bytes a rank sends in a binomial-tree broadcast: it forwards to one more child for
// every power of two above its distance from the root.
int64_t BroadcastSends(int rank, int size, int root) {
  const int distance = (rank - root + size) % size;
  int64_t sends = 0;
  for (int step = 1; step < size; step <<= 1) {
    if (distance < step && distance + step < size) ++sends;
  }
  return sends;
}

// One full mesh of connections, its keys under `name` in `store`.
std::shared_ptr<gloo::Context> Connect(const GlooOptions& options, gloo::rendezvous::Store& store,
                                       const std::string& name,
                                       std::shared_ptr<gloo::transport::Device>& device) {
  auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
  // Set before connecting: the connections take their timeout from the context.
  context->setTimeout(options.timeout);
  gloo::rendezvous::PrefixStore prefixed(name, store);
  context->connectFullMesh(prefixed, device);
  return context;
}

// How many distinct hostnames the ranks listen on: each publishes its own under `hostname/<rank>`
// and reads the others'.
int DistinctHosts(const GlooOptions& options, gloo::rendezvous::Store& store) {
  const std::string mine = fmt::format("hostname/{}", options.rank);
  store.set(mine, std::vector<char>(options.hostname.begin(), options.hostname.end()));
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(options.size));
  for (int rank = 0; rank < options.size; ++rank) keys.push_back(fmt::format("hostname/{}", rank));
  store.wait(keys, options.timeout);
  std::set<std::string> hosts;
  for (const std::string& key : keys) {
    const std::vector<char> name = store.get(key);
    hosts.emplace(name.begin(), name.end());
  }
  return static_cast<int>(hosts.size());
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const GlooOptions& options, std::shared_ptr<gloo::Context> collectives,
                   std::unique_ptr<gloo_detail::PeerLinks> links,
                   size_t auto_recursive_doubling_max_bytes, size_t auto_ring_min_bytes)
      : rank_(options.rank),
        size_(options.size),
        timeout_(options.timeout),
        auto_ring_min_bytes_(auto_ring_min_bytes),
        auto_recursive_doubling_max_bytes_(auto_recursive_doubling_max_bytes),
        ring_segment_bytes_(options.ring_segment_bytes),
        piece_bytes_(options.halving_doubling_piece_bytes),
        context_(std::move(collectives)),
        links_(std::move(links)),
        all_reducer_(context_, *links_) {}

  // An all-reduce can return on one rank while a peer still reads that rank's last messages;
  // closing the connections at once made the peer's collective fail with "connection closed by
  // peer" (Gloo's halving-doubling, about 1 run in 10 on 4 ranks). A barrier first lets every
  // rank finish. Best effort and bounded: when it fails a peer is gone already, and a
  // destructor has no one to tell.
  ~GlooCommunicator() override {
    std::lock_guard lock(mutex_);
    if (failure_.has_value() || !ran_exchanges_ || abort_requested_.load()) return;
    try {
      gloo::BarrierOptions options(context_);
      options.setTag(gloo_detail::kCloseTag);
      options.setTimeout(std::min(timeout_, kCloseTimeout));
      gloo::barrier(options);
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): see above
    }
  }
  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int64_t bytes_sent() const override { return bytes_sent_.load(); }
  int64_t bytes_received() const override { return bytes_received_.load(); }

  void AllReduceSum(void* data, size_t count, ElementType type, AllReduceAlgorithm algorithm,
                    const std::string& tag) override {
    // The call check compares the algorithm each rank will run, kAuto resolved: ranks whose
    // thresholds differ (options, or where they think the others sit) would otherwise run
    // different exchanges against each other.
    const AllReduceAlgorithm chosen = algorithm == AllReduceAlgorithm::kAuto
                                          ? AutoAlgorithm(count * ElementBytes(type))
                                          : algorithm;
    const CallSignature call{Collective::kAllReduceSum, type, static_cast<int32_t>(chosen), count,
                             tag};
    CheckBuffer(call, data != nullptr || count == 0, "data");
    Run(call, [&] {
      Verify(call);
      if (count == 0 || size_ == 1) return;
      gloo_detail::Traffic traffic;
      if (chosen == AllReduceAlgorithm::kRing) {
        traffic = all_reducer_.Ring(data, count, type, ring_segment_bytes_);
      } else if (chosen == AllReduceAlgorithm::kRecursiveDoubling) {
        ran_exchanges_ = true;
        traffic = all_reducer_.RecursiveDoubling(data, count, type, tag);
      } else if (chosen == AllReduceAlgorithm::kDirect) {
        ran_exchanges_ = true;
        traffic = all_reducer_.Direct(data, count, type, tag, piece_bytes_);
      } else {
        ran_exchanges_ = true;
        traffic = all_reducer_.HalvingDoubling(data, count, type, tag, piece_bytes_);
      }
      Count(traffic.sent, traffic.received);
    });
  }

  void AllGather(const void* in, size_t count, ElementType type, void* out,
                 const std::string& tag) override {
    const CallSignature call{Collective::kAllGather, type, 0, count, tag};
    CheckBuffer(call, (in != nullptr && out != nullptr) || count == 0, "in and out");
    Run(call, [&] {
      Verify(call);
      const size_t bytes = count * ElementBytes(type);
      if (bytes == 0) return;
      if (size_ == 1) {
        std::memmove(out, in, bytes);
        return;
      }
      const gloo_detail::Traffic traffic = GatherOnLinks(
          in, static_cast<std::byte*>(out), std::vector<size_t>(static_cast<size_t>(size_), bytes));
      Count(traffic.sent, traffic.received);
    });
  }

  void ReduceScatterSum(const void* in, void* out, size_t count, ElementType type,
                        const std::string& tag) override {
    const CallSignature call{Collective::kReduceScatterSum, type, 0, count, tag};
    detail::CheckReduceScatterBuffers(call, in, out, rank_, size_);
    Run(call, [&] {
      Verify(call);
      if (count == 0) return;
      const gloo_detail::Traffic traffic = ScatterSumOnLinks(
          static_cast<const std::byte*>(in), static_cast<std::byte*>(out), count, type);
      Count(traffic.sent, traffic.received);
    });
  }

  std::vector<size_t> AllGatherV(const void* in, size_t count, ElementType type,
                                 std::vector<std::byte>& out, const std::string& tag) override {
    const CallSignature call{Collective::kAllGatherV, type, 0, count, tag};
    CheckBuffer(call, in != nullptr || count == 0, "in");
    std::vector<size_t> counts;
    Run(call, [&] {
      // Every call exchanges the counts, which is also its size check.
      const std::vector<uint64_t> all = Exchange(call, /*on_links=*/true);
      counts.assign(all.begin(), all.end());
      const size_t element = ElementBytes(type);
      const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
      out.resize(total * element);
      if (total == 0) return;
      std::vector<size_t> bytes(counts.size());
      for (size_t r = 0; r < counts.size(); ++r) bytes[r] = counts[r] * element;
      const gloo_detail::Traffic traffic = GatherOnLinks(in, out.data(), bytes);
      Count(traffic.sent, traffic.received);
    });
    return counts;
  }

  void Broadcast(void* data, size_t bytes, int root, const std::string& tag) override {
    const CallSignature call{Collective::kBroadcast, ElementType::kFloat32, root, bytes, tag};
    AD_CHECK(root >= 0 && root < size_, kInvalidArgument,
             "{}: root {} is not a rank; expected 0 <= root < {}", Describe(call), root, size_);
    CheckBuffer(call, data != nullptr || bytes == 0, "data");
    Run(call, [&] {
      Verify(call);
      if (bytes == 0 || size_ == 1) return;
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<char*>(data), bytes);
      options.setRoot(root);
      options.setTag(gloo_detail::kDataTag);
      gloo::broadcast(options);
      Count(static_cast<int64_t>(bytes) * BroadcastSends(rank_, size_, root),
            rank_ == root ? 0 : static_cast<int64_t>(bytes));
    });
  }

  void Barrier(const std::string& tag) override {
    const CallSignature call{Collective::kBarrier, ElementType::kFloat32, 0, 0, tag};
    Run(call, [&] {
      Verify(call);
      if (size_ == 1) return;
      gloo::BarrierOptions options(context_);
      options.setTag(gloo_detail::kDataTag);
      gloo::barrier(options);
    });
  }

  // Shuts the links down at once, so that a collective waiting on them (every all-reduce but the
  // ring, the gathers, the reduce-scatter) fails now; one inside Gloo's own (the ring, broadcast,
  // barrier) fails at its timeout, as Gloo's waits cannot be interrupted from another thread.
  void Abort(const std::string& reason) override {
    {
      const std::lock_guard lock(abort_mutex_);
      if (abort_requested_.load()) return;
      abort_reason_ = reason;
      abort_requested_.store(true);
    }
    links_->Shutdown();
  }

 private:
  // "aborted: <reason>" once Abort was called, else nullopt.
  std::optional<std::string> AbortCause() {
    if (!abort_requested_.load()) return std::nullopt;
    const std::lock_guard lock(abort_mutex_);
    return "aborted: " + abort_reason_;
  }

  AllReduceAlgorithm AutoAlgorithm(size_t bytes) const {
    if (bytes >= auto_ring_min_bytes_) return AllReduceAlgorithm::kRing;
    if (bytes <= auto_recursive_doubling_max_bytes_) return AllReduceAlgorithm::kRecursiveDoubling;
    return AutoAlgorithmAbove(size_);
  }

  std::string Describe(const CallSignature& call) const {
    return detail::Describe(call, rank_, size_);
  }

  void CheckBuffer(const CallSignature& call, bool present, const char* which) const {
    AD_CHECK(present, kInvalidArgument, "{}: {} must not be null for {} elements", Describe(call),
             which, call.count);
  }

  void Count(int64_t sent, int64_t received) {
    bytes_sent_.fetch_add(sent);
    bytes_received_.fetch_add(received);
  }

  // Runs one collective: one at a time (every rank must issue them in the same order anyway),
  // with Gloo's failures turned into autodist::Error naming the call. A failure inside Gloo leaves
  // the connections in an unknown state, so it ends the communicator; closing the connections
  // makes the peers still waiting fail at once instead of at their own timeouts.
  template <typename Body>
  void Run(const CallSignature& call, Body&& body) {
    std::lock_guard lock(mutex_);
    AD_CHECK(!failure_.has_value(), kFailedPrecondition,
             "{}: the communicator failed earlier and cannot be used again: {}", Describe(call),
             failure_.value_or(""));
    if (const std::optional<std::string> aborted = AbortCause()) {
      failure_ = fmt::format("{}: {}", Describe(call), *aborted);
      CloseConnections();
      throw Error(ErrorCode::kUnavailable, *failure_);
    }
    try {
      body();
    } catch (const Error&) {
      throw;  // our own checks: every rank saw the same records, so the ranks stay in step
    } catch (const gloo_detail::LinkError& error) {
      Broken(call, error.timed_out(), "links", error.what());
    } catch (const gloo::IoException& error) {
      const std::string message = GlooMessage(error);
      // "Timed out waiting 2000ms for recv operation" (Gloo's event loop).
      const bool timed_out = message.find("Timed out") != std::string::npos ||
                             message.find("timeout") != std::string::npos;
      Broken(call, timed_out, "gloo", message);
    } catch (const std::exception& error) {
      failure_ = fmt::format("{}: gloo failed: {}", Describe(call), GlooMessage(error));
      CloseConnections();
      throw Error(ErrorCode::kInternal, *failure_);
    }
  }

  // A connection broke or a peer did not take part in time: ends the communicator. After an
  // Abort the links broke because of it, and its reason is the cause.
  [[noreturn]] void Broken(const CallSignature& call, bool timed_out, const char* where,
                           const std::string& message) {
    if (const std::optional<std::string> aborted = AbortCause()) {
      failure_ = fmt::format("{}: {}", Describe(call), *aborted);
      CloseConnections();
      throw Error(ErrorCode::kUnavailable, *failure_);
    }
    failure_ = fmt::format(
        "{}: {} ({}: {})", Describe(call),
        timed_out ? fmt::format("not every rank took part within the timeout of {:.1f} s (a "
                                "rank died, hangs, or runs another collective or size)",
                                Seconds(timeout_))
                  : std::string("the connection to a peer broke (the peer died or closed its "
                                "communicator)"),
        where, message);
    CloseConnections();
    throw Error(ErrorCode::kUnavailable, *failure_);
  }

  void CloseConnections() {
    try {
      links_->Shutdown();
      context_->closeConnections();
    } catch (const std::exception& error) {
      *failure_ += fmt::format(" (closing the connections failed too: {})", GlooMessage(error));
    }
  }

  // Every rank's record of its call, exchanged in a tiny allgather and checked against this
  // rank's; returns every rank's count. `on_links`: over the links, for the collectives that run
  // on them and check every call; else Gloo's allgather under its own tag.
  std::vector<uint64_t> Exchange(const CallSignature& call, bool on_links = false) {
    const detail::SignatureRecord mine = detail::Encode(call);
    std::vector<detail::SignatureRecord> records(static_cast<size_t>(size_));
    if (on_links) {
      GatherOnLinks(mine.data(), reinterpret_cast<std::byte*>(records.front().data()),
                    std::vector<size_t>(static_cast<size_t>(size_), mine.size()));
    } else if (size_ == 1) {
      records[0] = mine;
    } else {
      gloo::AllgatherOptions options(context_);
      options.setInput(const_cast<char*>(mine.data()), mine.size());
      options.setOutput(records.front().data(), records.size() * mine.size());
      options.setTag(gloo_detail::kCheckTag);
      gloo::allgather(options);
    }
    return detail::CheckAgreement(call, rank_, records);
  }

  // Every rank's `bytes[r]` bytes into `out`, one after another in rank order, this rank's from
  // `in`: each rank sends its own part straight to every other, all at once over the links (one
  // step, where Gloo's ring takes size - 1; and none of the delayed-ACK stalls of Gloo's pairs,
  // whose send buffers are pinned to twice their largest message: a sparse table's rows waited
  // on them). Returns what crossed.
  gloo_detail::Traffic GatherOnLinks(const void* in, std::byte* out,
                                     const std::vector<size_t>& bytes) {
    std::vector<size_t> offsets(bytes.size());
    std::exclusive_scan(bytes.begin(), bytes.end(), offsets.begin(), size_t{0});
    const auto mine = static_cast<size_t>(rank_);
    if (bytes[mine] > 0) std::memmove(out + offsets[mine], in, bytes[mine]);
    if (size_ == 1) return {};
    ran_exchanges_ = true;
    std::vector<gloo_detail::PeerLinks::Send> sends;
    std::vector<gloo_detail::PeerLinks::Receive> receives;
    int64_t received = 0;
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      const auto p = static_cast<size_t>(peer);
      sends.push_back({peer, {static_cast<const std::byte*>(in), bytes[mine]}});
      receives.push_back({peer, {out + offsets[p], bytes[p]}});
      received += static_cast<int64_t>(bytes[p]);
    }
    links_->ExchangeAll(sends, receives);
    return {static_cast<int64_t>(bytes[mine]) * (size_ - 1), received};
  }

  // A reduce-scatter in one exchange on the links: each peer gets its block of `in`, this rank
  // gets its own block of each peer's, in pieces of piece_bytes_ (which bound the scratch). Each
  // block is summed on its owner, its own part first, then the peers' in rank order, as the
  // direct all-reduce sums its shares: every rank's result has the same bits whatever the
  // timing. `out` is this rank's block of `in` or lies outside it (checked by the caller).
  gloo_detail::Traffic ScatterSumOnLinks(const std::byte* in, std::byte* out, size_t count,
                                         ElementType type) {
    const size_t element = ElementBytes(type);
    const auto mine = static_cast<size_t>(rank_);
    std::memmove(out, in + mine * count * element, count * element);
    if (size_ == 1) return {};
    ran_exchanges_ = true;
    const gloo_detail::SumFunction sum = gloo_detail::SumFor(type);
    const size_t piece = std::max<size_t>(1, piece_bytes_ / element);
    const size_t piece_bytes = std::min(piece, count) * element;
    std::vector<std::byte> scratch(static_cast<size_t>(size_ - 1) * piece_bytes);
    std::vector<gloo_detail::PeerLinks::Send> sends;
    std::vector<gloo_detail::PeerLinks::Receive> receives;
    gloo_detail::Traffic traffic;
    for (size_t offset = 0; offset < count; offset += piece) {
      const size_t length = std::min(piece, count - offset);
      const size_t bytes = length * element;
      sends.clear();
      receives.clear();
      for (int peer = 0; peer < size_; ++peer) {
        if (peer == rank_) continue;
        const auto p = static_cast<size_t>(peer);
        const size_t slot = p < mine ? p : p - 1;
        sends.push_back({peer, {in + (p * count + offset) * element, bytes}});
        receives.push_back({peer, {scratch.data() + slot * piece_bytes, bytes}});
      }
      links_->ExchangeAll(sends, receives);
      std::byte* at = out + offset * element;
      for (size_t slot = 0; slot + 1 < static_cast<size_t>(size_); ++slot) {
        sum(at, at, scratch.data() + slot * piece_bytes, length);
      }
      traffic.sent += static_cast<int64_t>(bytes) * (size_ - 1);
      traffic.received += static_cast<int64_t>(bytes) * (size_ - 1);
    }
    return traffic;
  }

  // Checks the call across ranks unless this tag was last verified with the same call. (When
  // only some ranks change a tag's sizes, those check while the others run the collective: no
  // data mixes, since the check has its own Gloo tag, and both sides time out.)
  void Verify(const CallSignature& call) {
    const auto it = verified_.find(call.tag);
    if (it != verified_.end() && it->second == call) return;
    verified_.erase(call.tag);
    Exchange(call);
    verified_.emplace(call.tag, call);
  }

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const size_t auto_ring_min_bytes_;
  const size_t auto_recursive_doubling_max_bytes_;
  const size_t ring_segment_bytes_;
  const size_t piece_bytes_;
  std::shared_ptr<gloo::Context> context_;         // Gloo's option-based collectives
  std::unique_ptr<gloo_detail::PeerLinks> links_;  // our own collectives' connections
  gloo_detail::AllReducer all_reducer_;
  std::mutex mutex_;
  std::map<std::string, CallSignature> verified_;  // by tag: the last call checked
  std::optional<std::string> failure_;             // why the communicator broke
  bool ran_exchanges_ = false;                     // ran a hypercube: close with a barrier
  std::atomic<bool> abort_requested_{false};
  std::mutex abort_mutex_;  // guards abort_reason_ (Abort comes from another thread)
  std::string abort_reason_;
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> bytes_received_{0};
};

}  // namespace

std::unique_ptr<Communicator> MakeGlooCommunicator(const GlooOptions& options) {
  AD_CHECK(options.size >= 1 && options.rank >= 0 && options.rank < options.size, kInvalidArgument,
           "gloo communicator: rank {} of {}: expected 0 <= rank < size >= 1", options.rank,
           options.size);
  const std::string what = fmt::format("gloo communicator rank {} of {} (store prefix '{}')",
                                       options.rank, options.size, options.prefix);
  AD_CHECK(options.store != nullptr, kInvalidArgument, "{}: no rendezvous store given", what);
  AD_CHECK(options.timeout.count() > 0, kInvalidArgument, "{}: timeout must be positive, got {} ms",
           what, options.timeout.count());
  AD_CHECK(options.exchange_spin.count() >= 0, kInvalidArgument,
           "{}: exchange spin must not be negative, got {} us", what,
           options.exchange_spin.count());
  AD_CHECK(options.ring_segment_bytes > 0, kInvalidArgument,
           "{}: ring segment bytes must be positive", what);
  // Gloo's halving-doubling counts bytes in an int.
  AD_CHECK(options.halving_doubling_piece_bytes >= 8 &&
               options.halving_doubling_piece_bytes <= size_t{INT_MAX},
           kInvalidArgument, "{}: halving-doubling piece bytes must be in [8, {}], got {}", what,
           INT_MAX, options.halving_doubling_piece_bytes);
  IgnoreSigpipe();
  std::shared_ptr<gloo::transport::Device> device;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& error) {
    Fail(ErrorCode::kInvalidArgument, "{}: cannot listen on hostname '{}': {}", what,
         options.hostname, GlooMessage(error));
  }
  std::shared_ptr<gloo::Context> collectives;
  std::unique_ptr<gloo_detail::PeerLinks> links;
  size_t auto_ring_min_bytes = SIZE_MAX;
  size_t auto_recursive_doubling_max_bytes = 0;
  try {
    std::optional<gloo::rendezvous::PrefixStore> prefixed;
    gloo::rendezvous::Store* store = options.store.get();
    if (!options.prefix.empty()) store = &prefixed.emplace(options.prefix, *options.store);
    collectives = Connect(options, *store, "collectives", device);
    gloo_detail::LinkOptions link_options;
    link_options.timeout = options.timeout;
    link_options.spin = options.exchange_spin;
    link_options.congestion_control = options.link_congestion_control;
    links = std::make_unique<gloo_detail::PeerLinks>(*store, options.rank, options.size,
                                                     options.hostname, link_options);
    auto_ring_min_bytes = options.auto_ring_min_bytes.value_or(SIZE_MAX);
    auto_recursive_doubling_max_bytes =
        options.auto_recursive_doubling_max_bytes
            ? *options.auto_recursive_doubling_max_bytes
            : AutoRecursiveDoublingMaxBytes(std::nullopt, options.size,
                                            DistinctHosts(options, *store));
  } catch (const Error& error) {
    throw Error(error.code(), fmt::format("{}: rendezvous: {}", what, error.what()));
  } catch (const std::exception& error) {
    Fail(ErrorCode::kUnavailable,
         "{}: connecting to the other ranks through the store failed (timeout {:.1f} s): {}", what,
         Seconds(options.timeout), GlooMessage(error));
  }
  return std::make_unique<GlooCommunicator>(options, std::move(collectives), std::move(links),
                                            auto_recursive_doubling_max_bytes, auto_ring_min_bytes);
}

size_t AutoRecursiveDoublingMaxBytes(std::optional<size_t> configured, int ranks,
                                     int distinct_hosts) {
  if (configured) return *configured;
  return ranks > 2 && distinct_hosts > 1 ? kNetworkRecursiveDoublingMaxBytes
                                         : kLocalRecursiveDoublingMaxBytes;
}

AllReduceAlgorithm AutoAlgorithmAbove(int ranks) {
  return std::has_single_bit(static_cast<unsigned>(std::max(ranks, 1)))
             ? AllReduceAlgorithm::kHalvingDoubling
             : AllReduceAlgorithm::kDirect;
}

namespace {

// The job's way in (registry.h): the rendezvous goes through the job's store, the tuning keeps
// GlooOptions' defaults.
std::unique_ptr<Communicator> MakeFromOptions(const CommunicatorOptions& options) {
  GlooOptions gloo;
  gloo.rank = options.rank;
  gloo.size = options.size;
  gloo.store = MakeGlooStore(options.rendezvous, options.connect_timeout);
  gloo.hostname = options.hostname;
  gloo.timeout = options.timeout;
  gloo.prefix = options.prefix;
  return MakeGlooCommunicator(gloo);
}

const CommunicatorRegistrar kRegistrar("gloo", MakeFromOptions);

}  // namespace

}  // namespace autodist::collective
