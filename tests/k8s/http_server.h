// Serves an ApiServer over HTTP/1.1 with cpprestsdk's http_listener (Boost.Asio underneath):
// plain HTTP on one address, keep-alive connections, watches streamed as chunked responses that
// stay open until the watch ends.
#pragma once

#include <memory>
#include <string>

#include "tests/k8s/api_server.h"

namespace autodist::k8s {

// HTTPS instead of plain HTTP: the server's certificate chain and key (PEM files), as a real
// API server serves with the cluster CA's certificate.
struct TlsFiles {
  std::string certificate_chain;
  std::string private_key;
};

class HttpServer {
 public:
  // Listens on `address`:`port`; port 0 picks a free one. Throws autodist::Error (kUnavailable)
  // when the address cannot be bound.
  HttpServer(ApiServer& api, const std::string& address, int port, TlsFiles tls = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // "http://127.0.0.1:PORT" ("https://" with TLS).
  std::string url() const;

 private:
  struct Impl;
  ApiServer& api_;
  std::unique_ptr<Impl> impl_;
  std::string address_;
  int port_ = 0;
  bool tls_ = false;
};

}  // namespace autodist::k8s
