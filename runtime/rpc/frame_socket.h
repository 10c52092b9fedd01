// A blocking TCP connection carrying frames: a fixed 24-byte head (magic, kind, the lengths of
// a small protobuf "meta" part and of a raw "data" part), the meta bytes, then the data bytes,
// which the receiver reads straight to where they belong (a tensor's storage) and the sender
// writes straight from where they are. The parameter server's data channel runs on it
// (ps_data_channel_server.h, ps_data_channel_client.h); the frame kinds are the caller's.
//
// With a TLS context (security/tls_context.h) the frames travel over mutual TLS: the client's
// Connect and the server's AcceptTls run the handshake, and a peer whose certificate the job's
// CA did not issue never gets a frame through.
//
// Not thread-safe, except ShutdownBoth, which another thread may call to wake a blocked call.
// Errors are autodist::Error: kUnavailable when the connection fails, closes or times out,
// kInvalidArgument for a malformed frame (wrong magic, meta over the limit).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

struct iovec;

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace autodist::security {
class TlsContext;
class TlsSession;
}  // namespace autodist::security

namespace autodist::rpc {

inline constexpr uint32_t kFrameMagic = 0x53504441;  // "ADPS" in little-endian bytes
// Meta parts are small (names, dims, sparse indices); this bounds what a peer can make us
// allocate before anything is checked. The same as the RPC message limit (rpc.h).
inline constexpr uint64_t kMaxFrameMetaBytes = uint64_t{64} << 20;

// A frame's head and meta; its data_bytes of data follow on the socket (ReadData / SkipData).
struct FrameHead {
  uint32_t kind = 0;
  uint64_t data_bytes = 0;
  std::string meta;
};

class FrameSocket {
 public:
  // Takes ownership of a connected socket; `peer` names the other side in errors.
  FrameSocket(int fd, std::string peer);
  ~FrameSocket();
  FrameSocket(const FrameSocket&) = delete;
  FrameSocket& operator=(const FrameSocket&) = delete;

  // Connects to host:port (TCP_NODELAY), then, with `tls`, runs the TLS handshake. `timeout`
  // bounds the connect, the handshake and, later, every single send or receive (0: none).
  // Throws kUnavailable naming the address (and, for a refused handshake, why).
  static std::unique_ptr<FrameSocket> Connect(const std::string& host, int port,
                                              std::chrono::milliseconds timeout,
                                              const security::TlsContext* tls = nullptr);

  // The server's side of the TLS handshake on an accepted connection, within `timeout` (a
  // client that says nothing does not hold the connection). Throws kUnavailable naming the peer
  // and why it was refused (tls_context.h).
  void AcceptTls(const security::TlsContext& tls, std::chrono::milliseconds timeout);
  // The common name of the peer's certificate after a TLS handshake, else "".
  std::string PeerMember() const;

  // Sends one frame: head, `meta` serialized, then `data_bytes` from `data`, in one sendmsg where
  // the kernel takes it all.
  void Send(uint32_t kind, const google::protobuf::MessageLite& meta, const void* data = nullptr,
            size_t data_bytes = 0);

  // Reads the next frame's head and meta. nullopt when the peer closed the connection cleanly
  // between frames.
  std::optional<FrameHead> ReadHead();
  // Reads the current frame's next `length` data bytes into `destination`.
  void ReadData(char* destination, size_t length);
  // Reads and drops `length` data bytes.
  void SkipData(uint64_t length);

  // True once the peer has closed or reset the connection (never blocks).
  bool PeerClosed() const;
  // Shuts both directions down: a call blocked on this socket in another thread returns (and
  // throws kUnavailable).
  void ShutdownBoth() const;
  // Shuts reading down: a blocked receive returns (and throws, or ReadHead finds the end); sends
  // still go out.
  void ShutdownRead() const;

  const std::string& peer() const { return peer_; }

 private:
  // Reads exactly `length` bytes; false when the peer closed before the first byte and
  // `eof_ok`.
  bool ReadExactly(char* destination, size_t length, bool eof_ok);
  // recv(2) and sendmsg(2), or their TLS equivalents.
  ssize_t ReceiveSome(char* destination, size_t length);
  ssize_t SendSome(const iovec* parts, size_t count);
  [[noreturn]] void FailIo(const char* what, int error) const;

  int fd_;
  std::string peer_;
  std::unique_ptr<security::TlsSession> tls_;
  std::string meta_scratch_;  // kept across sends: one allocation for the connection's life
};

// A listening TCP socket.
class TcpListener {
 public:
  // Binds host:0 (the OS picks the port) and listens. Throws kUnavailable naming the host.
  explicit TcpListener(const std::string& host);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  int port() const { return port_; }
  // The next connection (TCP_NODELAY), or -1 once Shutdown was called.
  int Accept(std::string& peer) const;
  // Wakes a blocked Accept, which returns -1 from then on.
  void Shutdown() const;

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace autodist::rpc
