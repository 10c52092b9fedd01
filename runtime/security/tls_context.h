// TLS over a connected socket, for the job's own protocols on plain TCP (the parameter server's
// data channel). Both sides present their member certificate and require the peer's, issued by
// the job's CA (mutual TLS); TLS 1.3 only, with AES-128-GCM, the cheapest AEAD on CPUs with AES
// instructions (the data channel moves whole tensors).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "runtime/security/job_credentials.h"

namespace autodist::security {

// The one cipher suite the data channel offers and accepts (and bench/tls_bench's echo uses).
inline constexpr char kDataCipherSuite[] = "TLS_AES_128_GCM_SHA256";

// An established TLS session on a socket it does not own. Reads and writes follow recv(2) and
// send(2): bytes moved, 0 on a read at the peer's end of the stream, -1 with errno set (EAGAIN
// when the socket's timeout passed, EPROTO for a TLS error, whose text error_text() holds).
class TlsSession {
 public:
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  ssize_t Read(void* destination, size_t length);
  ssize_t Write(const void* source, size_t length);
  // Sends TLS's close_notify (best effort; never blocks on the peer).
  void Close();

  // The common name of the peer's certificate: "worker-0".
  const std::string& peer_member() const { return peer_member_; }
  const std::string& error_text() const { return error_text_; }

 private:
  friend class TlsContext;
  struct Ssl;
  TlsSession(std::unique_ptr<Ssl> ssl, std::string peer_member);
  ssize_t Result(int returned, const char* what);

  std::unique_ptr<Ssl> ssl_;
  std::string peer_member_;
  std::string error_text_;
};

// True when OpenSSL's error text of a failed handshake says the peer sent bytes that are no TLS
// record at all: a plaintext client (or server).
bool SpeaksNoTls(std::string_view openssl_errors);

class TlsContext {
 public:
  enum class Side { kClient, kServer };

  // Throws InvalidArgument when the credentials do not load.
  TlsContext(const JobCredentials& credentials, Side side);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Runs the handshake on connected socket `fd` (blocking, bounded by the socket's timeouts).
  // Throws Unavailable, naming `peer` and why: the peer's certificate failed the job's check
  // (PeerCheck's words: another job's, expired), the peer spoke no TLS (a plaintext client), or
  // the peer refused ours.
  std::unique_ptr<TlsSession> Handshake(int fd, const std::string& peer) const;

  const std::string& member() const { return member_; }

 private:
  struct Context;
  std::unique_ptr<Context> context_;
  Side side_;
  std::string member_;
};

}  // namespace autodist::security
