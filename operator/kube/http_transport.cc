#include "operator/kube/http_transport.h"

#include <cpprest/http_client.h>

#include <boost/asio/ssl.hpp>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::kube {
namespace {

using web::http::http_request;
using web::http::http_response;
using web::http::client::http_client;
using web::http::client::http_client_config;
using ByteBuffer = concurrency::streams::streambuf<uint8_t>;

// Projected service-account tokens rotate (about hourly); client-go re-reads its token file
// every minute, and so do we.
constexpr auto kTokenRefresh = std::chrono::seconds(60);

std::function<void(boost::asio::ssl::context&)> TlsSetup(const Config& config) {
  return [ca = config.ca_pem, cert = config.client_cert_pem,
          key = config.client_key_pem](boost::asio::ssl::context& ctx) {
    if (!ca.empty()) ctx.add_certificate_authority(boost::asio::buffer(ca));
    if (!cert.empty()) {
      ctx.use_certificate_chain(boost::asio::buffer(cert));
      ctx.use_private_key(boost::asio::buffer(key), boost::asio::ssl::context::pem);
    }
  };
}

// Applies the PEM material to a scratch context so that a bad certificate or key fails when
// the client is made, naming the config, not at the first request deep in cpprestsdk.
void CheckTls(const Config& config) {
  boost::asio::ssl::context ctx(boost::asio::ssl::context::sslv23_client);
  const auto setup = TlsSetup(config);
  try {
    setup(ctx);
  } catch (const std::exception& e) {
    Fail(ErrorCode::kInvalidArgument,
         "{}: the certificate authority, client certificate or client key is not usable PEM: {}",
         config.source, e.what());
  }
}

http_client_config ClientConfig(const Config& config, std::chrono::milliseconds timeout) {
  http_client_config c;
  c.set_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  c.set_validate_certificates(!config.insecure_skip_tls_verify);
  if (!config.ca_pem.empty() || !config.client_cert_pem.empty()) {
    c.set_ssl_context_callback(TlsSetup(config));
  }
  return c;
}

// What a streamed response has delivered so far; shared with cpprestsdk's continuations, which
// may outlive the call that started them.
struct StreamState {
  std::mutex mutex;
  std::condition_variable_any cv;
  std::deque<std::string> chunks;
  bool ended = false;
  std::exception_ptr error;
  std::optional<HttpResult> rejected;  // a non-200 answer

  void Finish(std::exception_ptr e = nullptr) {
    std::lock_guard lock(mutex);
    ended = true;
    error = e;
    cv.notify_all();
  }
};

// Reads the body as it arrives: wait for one byte, then take whatever else is buffered, so each
// chunk the server flushes reaches the caller without waiting for a full buffer.
void ReadNext(ByteBuffer buffer, std::shared_ptr<StreamState> state,
              std::shared_ptr<http_client> client) {
  buffer.bumpc().then([buffer, state, client](pplx::task<ByteBuffer::int_type> next) mutable {
    try {
      const auto c = next.get();
      if (c == ByteBuffer::traits::eof()) {
        state->Finish();
        return;
      }
      std::string chunk(1, static_cast<char>(c));
      if (const size_t more = buffer.in_avail(); more > 0) {
        chunk.resize(1 + more);
        const size_t n = buffer.getn(reinterpret_cast<uint8_t*>(chunk.data()) + 1, more).get();
        chunk.resize(1 + n);
      }
      {
        std::lock_guard lock(state->mutex);
        if (state->ended) return;  // abandoned by the caller
        state->chunks.push_back(std::move(chunk));
        state->cv.notify_all();
      }
      ReadNext(buffer, state, client);
    } catch (...) {
      state->Finish(std::current_exception());
    }
  });
}

}  // namespace

struct HttpTransport::Impl {
  Config config;
  std::string user_agent;
  std::chrono::milliseconds timeout;
  http_client client;
  std::mutex token_mutex;
  std::string token;
  std::chrono::steady_clock::time_point token_read;
  std::optional<std::chrono::system_clock::time_point> token_expiry;  // an exec plugin's

  Impl(const Config& c, std::chrono::milliseconds t, std::string agent)
      : config(c),
        user_agent(std::move(agent)),
        timeout(t),
        client(c.server, ClientConfig(c, t)),
        token(c.token) {}

  // True when a 401 may be cured by reading the token again: it comes from a file that is
  // rotated, or from a plugin.
  bool Refreshable() const { return !config.token_file.empty() || config.exec.has_value(); }

  // The server refused the token (401): read it again before the next request.
  void Invalidate() {
    std::lock_guard lock(token_mutex);
    if (Refreshable()) token.clear();
  }

  std::string Token() {
    if (config.exec.has_value() && config.token.empty() && config.token_file.empty()) {
      std::lock_guard lock(token_mutex);
      // A token that expires within the next ten seconds is as good as expired: a request made
      // with it may arrive late.
      if (token.empty() ||
          (token_expiry.has_value() &&
           std::chrono::system_clock::now() + std::chrono::seconds(10) >= *token_expiry)) {
        ExecToken fresh = RunExecPlugin(*config.exec);
        token = std::move(fresh.token);
        token_expiry = fresh.expiry;
      }
      return token;
    }
    if (config.token_file.empty()) return token;
    std::lock_guard lock(token_mutex);
    const auto now = std::chrono::steady_clock::now();
    if (token.empty() || now - token_read > kTokenRefresh) {
      std::string text = ReadFileBytes(config.token_file, config.source + " token");
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      token = std::move(text);
      token_read = now;
    }
    return token;
  }

  http_request Request(const std::string& method, const std::string& path_and_query) {
    http_request request(method);
    request.set_request_uri(path_and_query);
    request.headers().add("Accept", "application/json");
    request.headers().add("User-Agent", user_agent);
    if (const std::string t = Token(); !t.empty()) {
      request.headers().add("Authorization", "Bearer " + t);
    }
    return request;
  }
};

HttpTransport::HttpTransport(const Config& config, std::chrono::milliseconds timeout,
                             std::string user_agent)
    : server_(config.server) {
  AD_CHECK(!config.server.empty(), kInvalidArgument, "{}: no API server URL",
           config.source.empty() ? "Kubernetes config" : config.source);
  CheckTls(config);
  try {
    impl_ = std::make_unique<Impl>(config, timeout, std::move(user_agent));
  } catch (const std::exception& e) {
    Fail(ErrorCode::kInvalidArgument, "{}: server '{}': {}", config.source, config.server,
         e.what());
  }
}

HttpTransport::~HttpTransport() = default;

HttpResult HttpTransport::Send(const std::string& method, const std::string& path_and_query,
                               const std::string& body, const std::string& content_type) {
  HttpResult result = SendOnce(method, path_and_query, body, content_type);
  // A rotated token (a projected service-account token, a plugin's that the server no longer
  // takes): read it again and try once more, as client-go does.
  if (result.status == 401 && impl_->Refreshable()) {
    impl_->Invalidate();
    result = SendOnce(method, path_and_query, body, content_type);
  }
  return result;
}

HttpResult HttpTransport::SendOnce(const std::string& method, const std::string& path_and_query,
                                   const std::string& body, const std::string& content_type) {
  http_request request = impl_->Request(method, path_and_query);
  if (!body.empty()) request.set_body(body, content_type);
  try {
    // The body is read in a continuation, so the caller waits once, for the whole answer: two
    // waits (headers, then body) cost the calling thread a second wake-up per request.
    return impl_->client.request(request)
        .then([](const http_response& response) {
          return response.extract_utf8string(true).then([response](const std::string& text) {
            HttpResult result;
            result.status = response.status_code();
            result.body = text;
            if (auto it = response.headers().find("Retry-After"); it != response.headers().end()) {
              result.retry_after = it->second;
            }
            return result;
          });
        })
        .get();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    Fail(ErrorCode::kUnavailable, "{} {}{}: cannot reach the API server: {}", method, server_,
         path_and_query, e.what());
  }
}

HttpResult HttpTransport::Stream(const std::string& path_and_query,
                                 std::chrono::milliseconds timeout,
                                 const std::function<void(std::string_view)>& on_data,
                                 std::stop_token stop) {
  // A client of its own: the watch holds its connection for minutes, and its timeout differs.
  auto client = std::make_shared<http_client>(server_, ClientConfig(impl_->config, timeout));
  auto state = std::make_shared<StreamState>();
  pplx::cancellation_token_source cancel;
  http_request request = impl_->Request("GET", path_and_query);
  client->request(request, cancel.get_token())
      .then([client, state](pplx::task<http_response> answered) {
        try {
          http_response response = answered.get();
          if (response.status_code() == web::http::status_codes::OK) {
            ReadNext(response.body().streambuf(), state, client);
            return;
          }
          // The body is read by a further continuation, not waited for here: this runs on
          // cpprestsdk's pool, which also has to deliver the body, and may be one thread.
          HttpResult rejected;
          rejected.status = response.status_code();
          if (auto it = response.headers().find("Retry-After"); it != response.headers().end()) {
            rejected.retry_after = it->second;
          }
          response.extract_utf8string(true).then(
              [state, rejected = std::move(rejected)](pplx::task<std::string> body) mutable {
                try {
                  rejected.body = body.get();
                } catch (...) {
                  state->Finish(std::current_exception());
                  return;
                }
                std::lock_guard lock(state->mutex);
                state->rejected = std::move(rejected);
                state->ended = true;
                state->cv.notify_all();
              });
        } catch (...) {
          state->Finish(std::current_exception());
        }
      });
  // Whatever ends this call (stop, the end of the stream, an exception from on_data) leaves no
  // continuation reading into it: mark it abandoned and cut the connection.
  struct Abandon {
    StreamState& state;
    pplx::cancellation_token_source& cancel;
    ~Abandon() {
      {
        std::lock_guard lock(state.mutex);
        state.ended = true;
      }
      cancel.cancel();
    }
  } abandon{*state, cancel};

  std::unique_lock lock(state->mutex);
  for (;;) {
    state->cv.wait(lock, stop, [&] { return !state->chunks.empty() || state->ended; });
    if (stop.stop_requested()) return HttpResult{200, "", ""};
    std::deque<std::string> chunks;
    chunks.swap(state->chunks);
    const bool ended = state->ended;
    lock.unlock();
    for (const auto& chunk : chunks) on_data(chunk);
    lock.lock();
    if (!ended || !state->chunks.empty()) continue;
    if (state->rejected) {
      // The next watch (the informer opens one) reads a rotated token again.
      if (state->rejected->status == 401) impl_->Invalidate();
      return *state->rejected;
    }
    if (state->error) {
      try {
        std::rethrow_exception(state->error);
      } catch (const std::exception& e) {
        Fail(ErrorCode::kUnavailable, "watch {}{}: the stream broke: {}", server_, path_and_query,
             e.what());
      }
    }
    return HttpResult{200, "", ""};
  }
}

}  // namespace autodist::kube
