#include "runtime/collective/gloo/peer_links.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gloo/rendezvous/store.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>

#include "runtime/common/file_descriptor.h"

namespace autodist::collective::gloo_detail {
namespace {

using Clock = std::chrono::steady_clock;

// What precedes every message on a link.
struct Head {
  uint64_t length = 0;
  uint64_t number = 0;
};
static_assert(sizeof(Head) == 16);

// A listening rank's secret, published with its address in the job's store (which only the
// job's members reach): who connects must show it.
using Token = std::array<uint8_t, 16>;

// What a connecting rank sends first.
struct Hello {
  int32_t rank = -1;
  Token token{};
};

// How long an accepted connection may take to say hello before it is dropped.
constexpr auto kHelloTimeout = std::chrono::seconds(5);

// What each link asks for as its send buffer; Linux grants up to net.core.wmem_max (twice that,
// counting its overhead).
constexpr int kSendBufferBytes = 4 << 20;

std::string ErrnoText(int error) { return std::strerror(error); }

struct AddressInfo {
  addrinfo* list = nullptr;
  ~AddressInfo() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

int MillisecondsUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX));
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, MillisecondsUntil(deadline));
    if (ready > 0) return true;
    if (ready == 0) return false;
    if (errno != EINTR) return false;
  }
}

Token NewToken() {
  std::random_device random;
  Token token;
  for (uint8_t& byte : token) byte = static_cast<uint8_t>(random());
  return token;
}

// "<numeric host> <port> <token in hex>" of a listening socket.
std::vector<char> Publish(int listener, const Token& token) {
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> port{};
  ::getnameinfo(reinterpret_cast<sockaddr*>(&bound), bound_length, host.data(), host.size(),
                port.data(), port.size(), NI_NUMERICHOST | NI_NUMERICSERV);
  std::string text = fmt::format("{} {} ", host.data(), port.data());
  for (const uint8_t byte : token) text += fmt::format("{:02x}", byte);
  return {text.begin(), text.end()};
}

struct Published {
  std::string text;
  std::string host;
  std::string port;
  Token token{};
  bool valid = false;
};

Published Parse(const std::vector<char>& value) {
  Published published;
  published.text.assign(value.begin(), value.end());
  std::istringstream in(published.text);
  std::string hex;
  if (!(in >> published.host >> published.port >> hex) || hex.size() != 2 * sizeof(Token)) {
    return published;
  }
  for (size_t i = 0; i < sizeof(Token); ++i) {
    const auto [end, error] =
        std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, published.token[i], 16);
    if (error != std::errc() || end != hex.data() + 2 * i + 2) return published;
  }
  published.valid = true;
  return published;
}

// Reads exactly `length` bytes from a non-blocking socket by `deadline`.
bool ReadFully(int fd, void* into, size_t length, Clock::time_point deadline) {
  auto* at = static_cast<char*>(into);
  while (length > 0) {
    const ssize_t got = ::recv(fd, at, length, 0);
    if (got > 0) {
      at += got;
      length -= static_cast<size_t>(got);
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR) || !WaitFor(fd, POLLIN, deadline)) {
      return false;
    }
  }
  return true;
}

// Non-blocking, no Nagle, a large send buffer, and the first congestion control of
// `congestion_control` the kernel lets this process choose (none: the system's default).
void MakeFast(int fd, const std::vector<std::string>& congestion_control) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Without this the kernel starts a connection at 16 KiB and a message larger than that waits for
  // its first part's acknowledgement (2 ranks, 64 KiB: 21-27 us per recursive doubling, 16 with).
  const int send_buffer = kSendBufferBytes;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof(send_buffer));
  for (const std::string& name : congestion_control) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                     static_cast<socklen_t>(name.size())) == 0) {
      break;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

// One direction of an exchange (defined before anything that builds or destroys the lists of
// them, outs_ and ins_): the head, then the body, `done` bytes of both moved so far.
struct PeerLinks::Transfer {
  int peer;
  Head head;
  std::byte* body;
  size_t body_size;
  size_t total;
  size_t done = 0;

  Transfer(int p, Head h, std::byte* b, size_t size)
      : peer(p), head(h), body(b), body_size(size), total(sizeof(Head) + size) {}
  bool finished() const { return done >= total; }

  // The parts still to move.
  size_t Remaining(std::array<iovec, 2>& parts) {
    size_t count = 0;
    size_t at = done;
    if (at < sizeof(Head)) {
      parts[count++] = {reinterpret_cast<char*>(&head) + at, sizeof(Head) - at};
      at = sizeof(Head);
    }
    if (at < total) parts[count++] = {body + (at - sizeof(Head)), total - at};
    return count;
  }
};

PeerLinks::PeerLinks(gloo::rendezvous::Store& store, int rank, int size,
                     const std::string& hostname, const LinkOptions& options)
    : rank_(rank),
      size_(size),
      timeout_(options.timeout),
      spin_(options.spin),
      links_(static_cast<size_t>(size)) {
  try {
    Connect(store, hostname, options);
  } catch (...) {
    // A constructor that throws runs no destructor: close the links made so far, so that the
    // peers holding their other ends fail at once rather than at their timeouts.
    CloseAll();
    throw;
  }
}

void PeerLinks::Connect(gloo::rendezvous::Store& store, const std::string& hostname,
                        const LinkOptions& options) {
  const int rank = rank_;
  const int size = size_;
  const std::chrono::milliseconds timeout = options.timeout;
  const Clock::time_point deadline = Clock::now() + timeout;
  const auto fail = [&](const std::string& what) {
    throw LinkError(fmt::format("rank {} of {}: {}", rank, size, what), false);
  };

  // Listen on the host's own address, port chosen by the OS, and publish it with a token of our
  // own: a connection that does not present it is not a rank of this communicator.
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  AddressInfo own;
  if (const int rc = ::getaddrinfo(hostname.c_str(), "0", &hints, &own.list); rc != 0) {
    fail(fmt::format("cannot resolve hostname '{}': {}", hostname, ::gai_strerror(rc)));
  }
  FileDescriptor listener(::socket(own.list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0 || ::bind(listener.get(), own.list->ai_addr, own.list->ai_addrlen) != 0 ||
      ::listen(listener.get(), size) != 0) {
    fail(fmt::format("cannot listen on '{}': {}", hostname, ErrnoText(errno)));
  }
  const Token token = NewToken();
  store.set(fmt::format("links/{}", rank), Publish(listener.get(), token));

  // Connect to every lower rank, saying who we are and showing its token.
  for (int peer = 0; peer < rank; ++peer) {
    const std::string key = fmt::format("links/{}", peer);
    // What is left of the rendezvous's time (at least 1 ms: 0 would tell the store to wait
    // forever).
    store.wait(
        {key},
        std::max(std::chrono::milliseconds(1),
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())));
    const Published published = Parse(store.get(key));
    if (!published.valid) fail(fmt::format("rank {} published '{}'", peer, published.text));
    addrinfo peer_hints{};
    peer_hints.ai_family = AF_UNSPEC;
    peer_hints.ai_socktype = SOCK_STREAM;
    peer_hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    AddressInfo theirs;
    if (::getaddrinfo(published.host.c_str(), published.port.c_str(), &peer_hints, &theirs.list) !=
        0) {
      fail(fmt::format("rank {} published '{}', not an address", peer, published.text));
    }
    FileDescriptor fd(::socket(theirs.list->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) fail(fmt::format("socket: {}", ErrnoText(errno)));
    MakeFast(fd.get(), options.congestion_control);
    if (::connect(fd.get(), theirs.list->ai_addr, theirs.list->ai_addrlen) != 0 &&
        errno != EINPROGRESS) {
      fail(fmt::format("connecting to rank {} at {}: {}", peer, published.text, ErrnoText(errno)));
    }
    if (!WaitFor(fd.get(), POLLOUT, deadline)) {
      fail(fmt::format("connecting to rank {} at {}: timed out", peer, published.text));
    }
    int error = 0;
    socklen_t error_length = sizeof(error);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &error_length);
    if (error != 0) {
      fail(fmt::format("connecting to rank {} at {}: {}", peer, published.text, ErrnoText(error)));
    }
    const Hello hello{rank, published.token};
    if (::send(fd.get(), &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello)) {
      fail(fmt::format("greeting rank {}: {}", peer, ErrnoText(errno)));
    }
    links_[static_cast<size_t>(peer)].fd = fd.release();
  }

  // Accept every higher rank. A connection that does not greet with a rank still missing and
  // our token within kHelloTimeout is dropped, and the wait goes on.
  MakeFast(listener.get(), options.congestion_control);
  for (int missing = size - 1 - rank; missing > 0;) {
    if (!WaitFor(listener.get(), POLLIN, deadline)) {
      fail(fmt::format("waiting for ranks {} to {} to connect: timed out ({} missing)", rank + 1,
                       size - 1, missing));
    }
    const int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED) continue;
      fail(fmt::format("accept: {}", ErrnoText(errno)));
    }
    FileDescriptor connection(fd);
    MakeFast(fd, options.congestion_control);
    Hello hello{};
    if (!ReadFully(fd, &hello, sizeof(hello), std::min(deadline, Clock::now() + kHelloTimeout)) ||
        hello.token != token || hello.rank <= rank || hello.rank >= size ||
        links_[static_cast<size_t>(hello.rank)].fd >= 0) {
      continue;  // not one of ours
    }
    links_[static_cast<size_t>(hello.rank)].fd = connection.release();
    --missing;
  }
}

PeerLinks::~PeerLinks() { CloseAll(); }

void PeerLinks::CloseAll() {
  for (Link& link : links_) {
    if (link.fd >= 0) ::close(link.fd);
    link.fd = -1;
  }
}

PeerLinks::Link& PeerLinks::LinkTo(int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw LinkError(fmt::format("rank {}: no link to rank {}", rank_, peer), false);
  }
  return links_[static_cast<size_t>(peer)];
}

void PeerLinks::Fail(int peer, const std::string& what, bool timed_out) const {
  throw LinkError(fmt::format("rank {}, link to rank {}: {}", rank_, peer, what), timed_out);
}

bool PeerLinks::SendSome(Transfer& out) {
  const int peer = out.peer;
  std::array<iovec, 2> parts{};
  msghdr header{};
  header.msg_iov = parts.data();
  header.msg_iovlen = out.Remaining(parts);
  const ssize_t sent =
      ::sendmsg(links_[static_cast<size_t>(peer)].fd, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (sent > 0) {
    out.done += static_cast<size_t>(sent);
    return true;
  }
  if (errno != EAGAIN && errno != EINTR) Fail(peer, fmt::format("send: {}", ErrnoText(errno)));
  return false;
}

bool PeerLinks::ReceiveSome(Transfer& in) {
  const int peer = in.peer;
  Link& link = links_[static_cast<size_t>(peer)];
  std::array<iovec, 2> parts{};
  const size_t count = in.Remaining(parts);
  const bool head_was_done = in.done >= sizeof(Head);
  const ssize_t received = ::readv(link.fd, parts.data(), static_cast<int>(count));
  if (received == 0) {
    Fail(peer, "the connection was closed by the peer (it died or closed its communicator)");
  }
  if (received < 0) {
    if (errno != EAGAIN && errno != EINTR) Fail(peer, fmt::format("receive: {}", ErrnoText(errno)));
    return false;
  }
  in.done += static_cast<size_t>(received);
  if (!head_was_done && in.done >= sizeof(Head) &&
      (in.head.length != in.body_size || in.head.number != link.received)) {
    Fail(peer, fmt::format("expected message {} of {} bytes, got message {} of {} bytes (the "
                           "ranks are out of step)",
                           link.received, in.body_size, in.head.number, in.head.length));
  }
  return true;
}

void PeerLinks::Exchange(int to, std::span<const std::byte> message, int from,
                         std::span<std::byte> into) {
  const Send send{to, message};
  const Receive receive{from, into};
  ExchangeAll(to >= 0 ? std::span<const Send>(&send, 1) : std::span<const Send>(),
              from >= 0 ? std::span<const Receive>(&receive, 1) : std::span<const Receive>());
}

void PeerLinks::ExchangeAll(std::span<const Send> sends, std::span<const Receive> receives) {
  if (shut_down_) {
    Fail(!sends.empty()      ? sends[0].to
         : !receives.empty() ? receives[0].from
                             : -1,
         "the links were shut down");
  }
  // Reserved before any is added: Transfer::Remaining hands the kernel pointers into them.
  std::vector<Transfer>& outs = outs_;
  std::vector<Transfer>& ins = ins_;
  outs.clear();
  ins.clear();
  outs.reserve(sends.size());
  ins.reserve(receives.size());
  for (const Send& send : sends) {
    Link& link = LinkTo(send.to);
    for (const Transfer& other : outs) {
      if (other.peer == send.to) Fail(send.to, "two sends to one peer in one exchange");
    }
    // The body is only read from: sendmsg's iovec takes a non-const pointer.
    outs.emplace_back(send.to, Head{send.message.size(), link.sent},
                      const_cast<std::byte*>(send.message.data()), send.message.size());
  }
  for (const Receive& receive : receives) {
    LinkTo(receive.from);
    for (const Transfer& other : ins) {
      if (other.peer == receive.from)
        Fail(receive.from, "two receives from one peer in one exchange");
    }
    ins.emplace_back(receive.from, Head{}, receive.into.data(), receive.into.size());
  }

  size_t unfinished = outs.size() + ins.size();
  std::vector<pollfd>& waits = waits_;
  Clock::time_point deadline = Clock::now() + timeout_;
  Clock::time_point spin_until = Clock::now() + spin_;
  while (unfinished > 0) {
    bool moved = false;
    for (Transfer& out : outs) {
      if (!out.finished() && SendSome(out)) {
        moved = true;
        if (out.finished()) --unfinished;
      }
    }
    for (Transfer& in : ins) {
      if (!in.finished() && ReceiveSome(in)) {
        moved = true;
        if (in.finished()) --unfinished;
      }
    }
    if (moved) {
      deadline = Clock::now() + timeout_;
      spin_until = Clock::now() + spin_;
      continue;
    }
    if (Clock::now() < spin_until) {
      sched_yield();  // a rank sharing this core (more ranks than cores) runs meanwhile
      continue;
    }
    waits.clear();
    const auto wait_for = [&](int fd, short events) {
      for (pollfd& wait : waits) {
        if (wait.fd == fd) {
          wait.events = static_cast<short>(wait.events | events);
          return;
        }
      }
      waits.push_back({fd, events, 0});
    };
    for (const Transfer& out : outs) {
      if (!out.finished()) wait_for(links_[static_cast<size_t>(out.peer)].fd, POLLOUT);
    }
    for (const Transfer& in : ins) {
      if (!in.finished()) wait_for(links_[static_cast<size_t>(in.peer)].fd, POLLIN);
    }
    const int ready = ::poll(waits.data(), waits.size(), MillisecondsUntil(deadline));
    if (ready > 0 || (ready < 0 && errno == EINTR)) continue;
    // Blame a receive that is still waiting, else a send.
    const auto unfinished_in =
        std::find_if(ins.begin(), ins.end(), [](const Transfer& in) { return !in.finished(); });
    const Transfer& stuck = unfinished_in != ins.end()
                                ? *unfinished_in
                                : *std::find_if(outs.begin(), outs.end(), [](const Transfer& out) {
                                    return !out.finished();
                                  });
    if (ready < 0) Fail(stuck.peer, fmt::format("poll: {}", ErrnoText(errno)));
    Fail(stuck.peer,
         fmt::format("nothing moved for {:.1f} s ({} {} of {} bytes)",
                     std::chrono::duration<double>(timeout_).count(),
                     unfinished_in != ins.end() ? "received" : "sent", stuck.done, stuck.total),
         /*timed_out=*/true);
  }
  for (const Transfer& out : outs) ++links_[static_cast<size_t>(out.peer)].sent;
  for (const Transfer& in : ins) ++links_[static_cast<size_t>(in.peer)].received;
}

std::string PeerLinks::CongestionControl(int peer) {
  std::array<char, 32> name{};
  auto length = static_cast<socklen_t>(name.size());
  if (::getsockopt(LinkTo(peer).fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), &length) != 0) {
    Fail(peer, fmt::format("getsockopt(TCP_CONGESTION): {}", ErrnoText(errno)));
  }
  return {name.data(), strnlen(name.data(), name.size())};
}

void PeerLinks::Shutdown() {
  shut_down_ = true;
  for (Link& link : links_) {
    if (link.fd >= 0) ::shutdown(link.fd, SHUT_RDWR);
  }
}

}  // namespace autodist::collective::gloo_detail
