// HTTP to the API server (cpprestsdk underneath, kept out of this header): TLS and
// authentication from a Config, one request at a time or one streamed response (watches).
// Internal to autodist_kube; Client is the interface the rest of the operator uses.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>

#include "operator/kube/config.h"

namespace autodist::kube {

struct HttpResult {
  int status = 0;
  std::string body;
  std::string retry_after;  // the Retry-After header, when sent
};

class HttpTransport {
 public:
  HttpTransport(const Config& config, std::chrono::milliseconds timeout, std::string user_agent);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Sends one request and reads the whole response. Throws autodist::Error (kUnavailable) when
  // the server cannot be reached or the request times out; any HTTP status is returned. A 401
  // with a token that can be read again (a token file, an exec plugin) is sent once more with
  // the token read afresh.
  HttpResult Send(const std::string& method, const std::string& path_and_query,
                  const std::string& body = "", const std::string& content_type = "");

  // GETs `path_and_query` and hands the response body to `on_data` piece by piece as it
  // arrives, until the server ends it or `stop` is requested (then it returns at once, and the
  // connection is torn down behind it). A non-200 answer is read whole and returned without
  // calling on_data. `timeout` bounds the whole exchange. Throws like Send; exceptions from
  // on_data propagate after the connection is cancelled.
  HttpResult Stream(const std::string& path_and_query, std::chrono::milliseconds timeout,
                    const std::function<void(std::string_view)>& on_data, std::stop_token stop);

  const std::string& server() const { return server_; }

 private:
  HttpResult SendOnce(const std::string& method, const std::string& path_and_query,
                      const std::string& body, const std::string& content_type);

  struct Impl;
  std::string server_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autodist::kube
