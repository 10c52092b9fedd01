#include "runtime/rpc/frame_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <google/protobuf/message_lite.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/security/tls_context.h"

namespace autodist::rpc {
namespace {

// The head on the wire, little-endian (every platform we build for is).
struct WireHead {
  uint32_t magic;
  uint32_t kind;
  uint64_t meta_bytes;
  uint64_t data_bytes;
};
static_assert(sizeof(WireHead) == 24);

void SetNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// 0: no timeout (also clearing an earlier one).
void SetTimeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  if (timeout.count() <= 0) timeout = std::chrono::milliseconds(0);
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

// "[::1]" -> "::1": endpoints bracket IPv6 hosts, getaddrinfo takes them bare.
std::string BareHost(const std::string& host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

std::string PeerName(const sockaddr_storage& address) {
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (address.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    inet_ntop(AF_INET6, &in6.sin6_addr, text.data(), text.size());
    return fmt::format("[{}]:{}", text.data(), ntohs(in6.sin6_port));
  }
  const auto& in4 = reinterpret_cast<const sockaddr_in&>(address);
  inet_ntop(AF_INET, &in4.sin_addr, text.data(), text.size());
  return fmt::format("{}:{}", text.data(), ntohs(in4.sin_port));
}

// Connects `fd` within `timeout` (0: the kernel's own). Returns 0 or an errno.
int ConnectWithin(int fd, const sockaddr* address, socklen_t length,
                  std::chrono::milliseconds timeout) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int error = 0;
  if (connect(fd, address, length) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      pollfd waiter{fd, POLLOUT, 0};
      const int ready =
          poll(&waiter, 1, timeout.count() > 0 ? static_cast<int>(timeout.count()) : -1);
      if (ready == 0) {
        error = ETIMEDOUT;
      } else if (ready < 0) {
        error = errno;
      } else {
        socklen_t size = sizeof error;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
      }
    }
  }
  fcntl(fd, F_SETFL, flags);
  return error;
}

// Resolves host:service (an empty host: every local address, with AI_PASSIVE) and runs
// `attempt` (0, or an errno) on a fresh socket for each address until one succeeds. Returns
// that socket, or -1 with the last errno in `error`; throws Unavailable, prefixed `what`, when
// the name does not resolve.
int OpenFirst(const std::string& host, const std::string& service, int flags,
              const std::string& what, const std::function<int(int, const addrinfo&)>& attempt,
              int& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags;
  addrinfo* found = nullptr;
  const std::string bare = BareHost(host);
  const int resolved =
      getaddrinfo(bare.empty() ? nullptr : bare.c_str(), service.c_str(), &hints, &found);
  AD_CHECK(resolved == 0 && found != nullptr, kUnavailable, "{}: {}", what, gai_strerror(resolved));
  int opened = -1;
  for (const addrinfo* candidate = found; candidate != nullptr && opened < 0;
       candidate = candidate->ai_next) {
    const int fd =
        socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, candidate->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    error = attempt(fd, *candidate);
    if (error == 0) {
      opened = fd;
    } else {
      close(fd);
    }
  }
  freeaddrinfo(found);
  return opened;
}

}  // namespace

FrameSocket::FrameSocket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}

FrameSocket::~FrameSocket() {
  if (tls_) tls_->Close();
  close(fd_);
}

std::unique_ptr<FrameSocket> FrameSocket::Connect(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout,
                                                  const security::TlsContext* tls) {
  const std::string address = fmt::format("{}:{}", host, port);
  int error = 0;
  const int fd = OpenFirst(
      host, std::to_string(port), 0, fmt::format("data channel {}: cannot resolve", address),
      [&](int candidate, const addrinfo& at) {
        return ConnectWithin(candidate, at.ai_addr, at.ai_addrlen, timeout);
      },
      error);
  AD_CHECK(fd >= 0, kUnavailable, "data channel {}: cannot connect: {}", address,
           std::strerror(error));
  SetNoDelay(fd);
  SetTimeouts(fd, timeout);
  auto socket = std::make_unique<FrameSocket>(fd, address);
  if (tls != nullptr) socket->tls_ = tls->Handshake(fd, "data channel " + address);
  return socket;
}

void FrameSocket::AcceptTls(const security::TlsContext& tls, std::chrono::milliseconds timeout) {
  SetTimeouts(fd_, timeout);
  tls_ = tls.Handshake(fd_, "data channel: refused a connection from " + peer_);
  // Back to no timeout: the server waits for a client's next Step as long as it likes.
  SetTimeouts(fd_, std::chrono::milliseconds(0));
}

std::string FrameSocket::PeerMember() const { return tls_ ? tls_->peer_member() : ""; }

ssize_t FrameSocket::ReceiveSome(char* destination, size_t length) {
  if (tls_) return tls_->Read(destination, length);
  return recv(fd_, destination, length, 0);
}

ssize_t FrameSocket::SendSome(const iovec* parts, size_t count) {
  if (tls_) {
    // One TLS write per part: a record holds at most 16 KiB, so the head and meta, when sent
    // apart from the data, cost one small record more and save a copy of the data.
    return tls_->Write(parts[0].iov_base, parts[0].iov_len);
  }
  msghdr message{};
  message.msg_iov = const_cast<iovec*>(parts);
  message.msg_iovlen = count;
  return sendmsg(fd_, &message, MSG_NOSIGNAL);
}

void FrameSocket::FailIo(const char* what, int error) const {
  if (error == EAGAIN || error == EWOULDBLOCK) {
    Fail(ErrorCode::kUnavailable, "data channel {}: {} timed out", peer_, what);
  }
  if (error == EPROTO && tls_) {
    Fail(ErrorCode::kUnavailable, "data channel {}: {} failed: {}", peer_, what,
         tls_->error_text());
  }
  Fail(ErrorCode::kUnavailable, "data channel {}: {} failed: {}", peer_, what,
       std::strerror(error));
}

void FrameSocket::Send(uint32_t kind, const google::protobuf::MessageLite& meta, const void* data,
                       size_t data_bytes) {
  meta_scratch_.clear();
  AD_CHECK(meta.AppendToString(&meta_scratch_), kInternal,
           "data channel {}: cannot serialize a frame of kind {}", peer_, kind);
  const WireHead head{kFrameMagic, kind, meta_scratch_.size(), data_bytes};
  std::array<iovec, 3> parts{{{const_cast<WireHead*>(&head), sizeof head},
                              {meta_scratch_.data(), meta_scratch_.size()},
                              {const_cast<void*>(data), data_bytes}}};
  if (tls_) {
    // TLS writes one part at a time: head and meta go as one record.
    meta_scratch_.insert(0, reinterpret_cast<const char*>(&head), sizeof head);
    parts[0] = {meta_scratch_.data(), meta_scratch_.size()};
    parts[1] = {nullptr, 0};
  }
  size_t first = 0;
  while (first < parts.size()) {
    if (parts[first].iov_len == 0) {
      ++first;
      continue;
    }
    const ssize_t sent = SendSome(&parts[first], parts.size() - first);
    if (sent < 0) {
      if (errno == EINTR) continue;
      FailIo("send", errno);
    }
    // Advance past what the kernel took.
    auto left = static_cast<size_t>(sent);
    while (first < parts.size() && left >= parts[first].iov_len) {
      left -= parts[first].iov_len;
      ++first;
    }
    if (first < parts.size()) {
      parts[first].iov_base = static_cast<char*>(parts[first].iov_base) + left;
      parts[first].iov_len -= left;
    }
  }
}

bool FrameSocket::ReadExactly(char* destination, size_t length, bool eof_ok) {
  size_t done = 0;
  while (done < length) {
    const ssize_t got = ReceiveSome(destination + done, length - done);
    if (got == 0) {
      if (eof_ok && done == 0) return false;
      Fail(ErrorCode::kUnavailable,
           "data channel {}: the connection closed in the middle of a frame", peer_);
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      FailIo("receive", errno);
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

std::optional<FrameHead> FrameSocket::ReadHead() {
  WireHead head{};
  if (!ReadExactly(reinterpret_cast<char*>(&head), sizeof head, true)) return std::nullopt;
  AD_CHECK(head.magic == kFrameMagic, kInvalidArgument,
           "data channel {}: a frame starts with {:#010x}, not the magic {:#010x}", peer_,
           head.magic, kFrameMagic);
  AD_CHECK(head.meta_bytes <= kMaxFrameMetaBytes, kInvalidArgument,
           "data channel {}: a frame's meta part of {} bytes is larger than the limit of {}", peer_,
           head.meta_bytes, kMaxFrameMetaBytes);
  FrameHead out;
  out.kind = head.kind;
  out.data_bytes = head.data_bytes;
  out.meta.resize(head.meta_bytes);
  ReadExactly(out.meta.data(), out.meta.size(), false);
  return out;
}

void FrameSocket::ReadData(char* destination, size_t length) {
  ReadExactly(destination, length, false);
}

void FrameSocket::SkipData(uint64_t length) {
  std::array<char, size_t{64} << 10> sink{};
  while (length > 0) {
    const size_t chunk = std::min<uint64_t>(length, sink.size());
    ReadExactly(sink.data(), chunk, false);
    length -= chunk;
  }
}

bool FrameSocket::PeerClosed() const {
  pollfd waiter{fd_, POLLRDHUP, 0};
  return poll(&waiter, 1, 0) > 0 && (waiter.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void FrameSocket::ShutdownBoth() const { shutdown(fd_, SHUT_RDWR); }

void FrameSocket::ShutdownRead() const { shutdown(fd_, SHUT_RD); }

TcpListener::TcpListener(const std::string& host) {
  int error = 0;
  fd_ = OpenFirst(
      host, "0", AI_PASSIVE, fmt::format("data channel: cannot resolve the listen host '{}'", host),
      [](int candidate, const addrinfo& at) {
        return bind(candidate, at.ai_addr, at.ai_addrlen) == 0 && listen(candidate, 128) == 0
                   ? 0
                   : errno;
      },
      error);
  AD_CHECK(fd_ >= 0, kUnavailable, "data channel: cannot listen on '{}': {}", host,
           std::strerror(error));
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &size);
  port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
}

TcpListener::~TcpListener() { close(fd_); }

int TcpListener::Accept(std::string& peer) const {
  for (;;) {
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    const int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&address), &size, SOCK_CLOEXEC);
    if (fd >= 0) {
      SetNoDelay(fd);
      peer = PeerName(address);
      return fd;
    }
    // After Shutdown accept fails with EINVAL; transient errors (a connection reset before it
    // was accepted, running out of descriptors for a moment) are retried.
    if (errno == EINVAL || errno == EBADF) return -1;
    if (errno == EMFILE || errno == ENFILE) usleep(10000);
  }
}

void TcpListener::Shutdown() const { shutdown(fd_, SHUT_RDWR); }

}  // namespace autodist::rpc
