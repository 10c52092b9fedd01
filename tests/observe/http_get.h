// A blocking HTTP/1.1 GET over a plain socket, for tests that read the /metrics, /healthz and
// /readyz endpoints: a few lines instead of an HTTP client library in every test that scrapes.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace autodist::testing {

struct HttpReply {
  int status = 0;
  std::string head;  // the status line and the headers
  std::string body;
};

// GET http://127.0.0.1:`port``path`; nullopt when nothing listens there or the reply is cut.
inline std::optional<HttpReply> HttpGet(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string raw;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buffer[16384];
      ssize_t n = 0;
      while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, n);
    }
  }
  ::close(fd);
  const size_t end_of_head = raw.find("\r\n\r\n");
  if (!raw.starts_with("HTTP/1.") || end_of_head == std::string::npos) return std::nullopt;
  HttpReply reply;
  reply.head = raw.substr(0, end_of_head);
  reply.body = raw.substr(end_of_head + 4);
  reply.status = std::stoi(raw.substr(9, 3));
  // Content-Length, when given, must match: a shorter body means the reply was cut.
  const size_t length_at = reply.head.find("Content-Length: ");
  if (length_at != std::string::npos &&
      std::stoul(reply.head.substr(length_at + 16)) != reply.body.size()) {
    return std::nullopt;
  }
  return reply;
}

}  // namespace autodist::testing
