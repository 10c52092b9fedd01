#include "tests/k8s/http_server.h"

#include <arpa/inet.h>
#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <netinet/in.h>
#include <pplx/threadpool.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cctype>
#include <chrono>
#include <thread>

#include "runtime/common/error.h"

namespace autodist::k8s {
namespace {

using web::http::http_request;
using web::http::http_response;
using Buffer = concurrency::streams::producer_consumer_buffer<uint8_t>;

// A watch response body: bytes appended here are sent as HTTP chunks by the listener, which
// reads the buffer asynchronously; sync() makes what was written readable at once.
//
// Nothing here waits on a task. The store calls Write and Close holding its lock, on a thread of
// cpprestsdk's pool. A producer_consumer_buffer does the work of putn_nocopy, sync and close
// before they return, but sync and close hand back a trivial continuation that runs on that
// pool: waiting for it would deadlock once every pool thread is a request waiting for the
// store's lock.
class BufferSink : public WatchSink {
 public:
  explicit BufferSink(Buffer buffer) : buffer_(std::move(buffer)) {}

  void Write(const std::string& data) override {
    if (!buffer_.can_write()) return;
    // Copied into the buffer's blocks and done on return; get() only surfaces an error.
    buffer_.putn_nocopy(reinterpret_cast<const uint8_t*>(data.data()), data.size()).get();
    static_cast<void>(buffer_.sync());
  }
  void Close() override {
    if (buffer_.can_write()) static_cast<void>(buffer_.close(std::ios_base::out));
  }
  size_t Backlog() const override { return buffer_.in_avail(); }

 private:
  Buffer buffer_;
};

// Asks the kernel for a free port. The listener binds it right after; the window in between is
// the price of cpprestsdk not reporting the port it bound.
int FreePort(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  AD_CHECK(fd >= 0, kUnavailable, "fake-apiserver: cannot create a socket: {}", strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  const bool parsed = ::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) == 1;
  const bool bound = parsed && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  socklen_t len = sizeof(addr);
  const bool named = bound && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  AD_CHECK(named, kUnavailable, "fake-apiserver: cannot bind {} to pick a port: {}", address,
           parsed ? strerror(errno) : "not an IPv4 address");
  return ntohs(addr.sin_port);
}

void Send(http_request request, const HttpResponse& response) {
  if (response.stream) {
    Buffer buffer;
    auto sink = std::make_shared<BufferSink>(buffer);
    http_response out(web::http::status_codes::OK);
    out.set_body(concurrency::streams::istream(buffer), "application/json");
    out.headers().add("Cache-Control", "no-cache, private");
    auto watcher = response.stream(sink);
    request.reply(out).then([watcher](pplx::task<void> done) {
      try {
        done.get();
      } catch (const std::exception&) {
        // The client went away mid-stream; ending the watch below is all there is to do.
      }
      watcher->Stop();
    });
    return;
  }
  http_response out(static_cast<web::http::status_code>(response.status));
  out.set_body(response.body, response.content_type);
  for (const auto& [name, value] : response.headers) out.headers().add(name, value);
  request.reply(out);
}

}  // namespace

struct HttpServer::Impl {
  std::unique_ptr<web::http::experimental::listener::http_listener> listener;
};

HttpServer::HttpServer(ApiServer& api, const std::string& address, int port, TlsFiles tls)
    : api_(api),
      impl_(std::make_unique<Impl>()),
      address_(address),
      tls_(!tls.certificate_chain.empty()) {
  web::http::experimental::listener::http_listener_config config;
  if (tls_) {
    config.set_ssl_context_callback([tls](boost::asio::ssl::context& context) {
      context.use_certificate_chain_file(tls.certificate_chain);
      context.use_private_key_file(tls.private_key, boost::asio::ssl::context::pem);
    });
  }
  const auto handler = [&api](http_request request) {
    request.extract_vector().then([&api, request](pplx::task<std::vector<unsigned char>> body) {
      HttpRequest in;
      in.method = request.method();
      const web::uri uri = request.relative_uri();
      in.path = PercentDecode(uri.path(), false);
      in.raw_query = uri.query();
      for (const auto& [name, value] : request.headers()) {
        std::string lower = name;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        in.headers[lower] = value;
      }
      try {
        const auto bytes = body.get();
        in.body.assign(bytes.begin(), bytes.end());
      } catch (const std::exception& e) {
        request.reply(web::http::status_codes::BadRequest,
                      std::string("cannot read body: ") + e.what());
        return;
      }
      HttpResponse response = api.Handle(in);
      if (response.delay.count() <= 0) {
        Send(request, response);
        return;
      }
      // Injected latency waits on a timer, not on a listener thread.
      auto timer = std::make_shared<boost::asio::steady_timer>(
          crossplat::threadpool::shared_instance().service(), response.delay);
      timer->async_wait([timer, request, response](const boost::system::error_code&) {
        Send(request, response);
      });
    });
  };
  // A port picked here can be taken by another process before the listener binds it: retry.
  for (int attempt = 0;; ++attempt) {
    port_ = port != 0 ? port : FreePort(address);
    impl_->listener =
        std::make_unique<web::http::experimental::listener::http_listener>(url(), config);
    impl_->listener->support(handler);
    try {
      impl_->listener->open().wait();
      break;
    } catch (const std::exception& e) {
      if (port != 0 || attempt >= 5) {
        Fail(ErrorCode::kUnavailable, "fake-apiserver: cannot listen on {}: {}", url(), e.what());
      }
    }
  }
  api.set_server_address(address_ + ":" + std::to_string(port_));
}

HttpServer::~HttpServer() {
  // Open watches hold their connections; the listener's close waits for every connection.
  api_.store().CloseAllWatches();
  // Connections that clients closed just before (a test's clients go right before its double)
  // are still ending on the pool: cpprestsdk's close walking one of them as it goes crashed in
  // its reactor, about once in 100 teardowns under load. A moment lets them end first.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  try {
    impl_->listener->close().wait();
  } catch (const std::exception&) {
    // Closing a listener whose connections already failed cannot be acted on during teardown.
  }
}

std::string HttpServer::url() const {
  return (tls_ ? "https://" : "http://") + address_ + ":" + std::to_string(port_);
}

}  // namespace autodist::k8s
