// A full mesh of plain TCP connections between the ranks of the Gloo communicator, for the
// exchanges of the hypercube all-reduces (hypercube_allreduce.h), which need what Gloo's pairs
// do not give:
//
// * A rank sends to a peer while it receives from one, on non-blocking sockets under poll(2):
//   two ranks that send to each other at once never both block in a write, whatever the size.
// * Send buffers sized once, large. Gloo's pairs fix SO_SNDBUF at twice the largest message so
//   far, so a message can wait for the acknowledgement of the one before it, and on loopback
//   that acknowledgement waits for the delayed-ACK timer: 2 ranks, 128 KiB, 1.5 ms per
//   all-reduce where 256 KiB took 0.16 ms.
// * A congestion control of our choosing: with BBR (this machine's default) and no fq qdisc, TCP
//   paces with timers, and loopback all-reduces ran at half speed one run in two (2 ranks, 1 MiB:
//   150 or 300 us; 4 MiB: 0.6 or 1.3 ms); with cubic or reno, 150 us and 0.6 ms every run.
// * A short spin before sleeping: waking a thread that sleeps in the kernel costs about 15 us
//   here (a VM), more than a small exchange itself (2 ranks, 4 KiB recursive doubling: 17 us
//   sleeping, 7 us spinning). Open MPI polls the same way.
//
// Each message carries a 16-byte head (its length and the link's message number), so that a
// peer out of step is an error naming both sides, never data read as something else.
//
// Not thread-safe: the communicator runs one collective at a time. Errors are LinkError.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

struct pollfd;

namespace gloo::rendezvous {
class Store;
}  // namespace gloo::rendezvous

namespace autodist::collective::gloo_detail {

// A connection failed, closed or timed out. The communicator turns it into autodist::Error and
// ends itself, as it does for Gloo's own failures.
class LinkError : public std::runtime_error {
 public:
  LinkError(std::string message, bool timed_out)
      : std::runtime_error(std::move(message)), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

struct LinkOptions {
  // Bounds the rendezvous, and each Exchange from its last progress.
  std::chrono::milliseconds timeout{60000};
  // How long an Exchange that finds nothing to move keeps trying (yielding the CPU between tries)
  // before it sleeps in poll(2).
  std::chrono::microseconds spin{0};
  // TCP congestion controls to ask for, in order; the first the kernel allows this process wins
  // (none: the system's default). See GlooOptions::link_congestion_control.
  std::vector<std::string> congestion_control;
};

class PeerLinks {
 public:
  // Listens on `hostname`, publishes the address in `store` (under "links/<rank>") and connects
  // to every other rank: to the lower ranks, and accepts the higher. Throws LinkError when the
  // others do not show up within the timeout.
  PeerLinks(gloo::rendezvous::Store& store, int rank, int size, const std::string& hostname,
            const LinkOptions& options);
  ~PeerLinks();
  PeerLinks(const PeerLinks&) = delete;
  PeerLinks& operator=(const PeerLinks&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Sends `message` to `to` while receiving exactly `into.size()` bytes from `from`, both at
  // once; -1 skips a side. Returns when both are done. Throws LinkError when a connection breaks,
  // the peer's message has another length, or nothing moves for the timeout.
  void Exchange(int to, std::span<const std::byte> message, int from, std::span<std::byte> into);

  struct Send {
    int to;
    std::span<const std::byte> message;
  };
  struct Receive {
    int from;
    std::span<std::byte> into;
  };
  // Every send and receive at once, at most one of each per peer; returns when all are done.
  // Throws as Exchange.
  void ExchangeAll(std::span<const Send> sends, std::span<const Receive> receives);

  // The congestion control of the link to `peer` (TCP_CONGESTION).
  std::string CongestionControl(int peer);

  // Shuts every connection down: peers blocked in Exchange fail at once instead of at their
  // timeout, and so does an Exchange of this rank in flight on another thread. Exchange fails
  // from then on.
  void Shutdown();

 private:
  struct Link {
    int fd = -1;
    uint64_t sent = 0;      // messages sent on this link
    uint64_t received = 0;  // and received
  };

  struct Transfer;

  // The rendezvous (the constructor's work).
  void Connect(gloo::rendezvous::Store& store, const std::string& hostname,
               const LinkOptions& options);
  void CloseAll();
  Link& LinkTo(int peer);
  // One non-blocking try each way; true when bytes moved.
  bool SendSome(Transfer& out);
  bool ReceiveSome(Transfer& in);
  [[noreturn]] void Fail(int peer, const std::string& what, bool timed_out = false) const;

  const int rank_;
  const int size_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::microseconds spin_;
  std::vector<Link> links_;             // by rank; this rank's own is unused
  std::atomic<bool> shut_down_{false};  // Shutdown may come from another thread
  // ExchangeAll's working state, kept so that an exchange allocates nothing once they have grown.
  std::vector<Transfer> outs_;
  std::vector<Transfer> ins_;
  std::vector<pollfd> waits_;
};

}  // namespace autodist::collective::gloo_detail
