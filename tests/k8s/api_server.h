// The Kubernetes API-server test double, transport-independent: Handle() maps one HTTP request
// to one response (or to a watch stream), so tests can drive it in-process and http_server.h
// serves it over HTTP for kubectl and the operator.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/k8s/faults.h"
#include "tests/k8s/rest.h"
#include "tests/k8s/store.h"

namespace autodist::k8s {

struct HttpRequest {
  std::string method;
  std::string path;                            // percent-decoded
  std::string raw_query;                       // as sent, without '?'
  std::map<std::string, std::string> headers;  // names lower-case
  std::string body;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Latency injected by a fault rule: the transport waits this long before answering.
  std::chrono::milliseconds delay{0};
  // Set for watches: the transport makes a sink for the response body and calls this; events
  // then stream into the sink until the watch ends (sink closed).
  std::function<std::shared_ptr<Watcher>(std::shared_ptr<WatchSink>)> stream;
};

struct ApiServerOptions {
  StoreOptions store;
  // How often watches that allow bookmarks get one (the real server: about a minute).
  std::chrono::milliseconds bookmark_interval{1000};
  // Serve aggregated discovery (apidiscovery.k8s.io/v2) when asked; false forces the legacy
  // per-group-version documents.
  bool aggregated_discovery = true;
  std::string server_address = "127.0.0.1:0";  // reported in /api
  // Run the garbage collector's sweep (Store::CollectGarbage) with every tick, so objects created
  // with ownerReferences to missing owners disappear shortly after, as on a real cluster.
  bool collect_garbage = true;
  // Authentication: when set, every request must carry "Authorization: Bearer <token>" with the
  // token this file holds (read again for each request, so a test rotates it by rewriting the
  // file); anything else is 401 Unauthorized, as the real server answers an unknown token.
  std::string bearer_token_file;
};

// Serves GET .../pods/<name>/log: the text a container of a pod logged, or nullopt when it has
// not run (no node agent, or not started yet).
using PodLogReader = std::function<std::optional<std::string>(
    const std::string& ns, const std::string& pod, const std::string& container)>;

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options = {});
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Never throws: every failure becomes a metav1.Status response.
  HttpResponse Handle(const HttpRequest& request);

  Store& store() { return store_; }
  Faults& faults() { return faults_; }
  void set_server_address(std::string address);
  // Installed by the node agent; null (the default) answers every pods/log request as a
  // container that has not started.
  void set_pod_log_reader(PodLogReader reader);

 private:
  using Query = std::map<std::string, std::string>;

  HttpResponse Dispatch(const HttpRequest& request, const Query& query);
  HttpResponse Control(const HttpRequest& request);
  // Throws ApiError 401 unless the request carries the bearer token (options_.bearer_token_file).
  void Authenticate(const HttpRequest& request) const;
  std::optional<HttpResponse> NonResource(const HttpRequest& request);
  HttpResponse Resource(const HttpRequest& request, const Query& query,
                        const std::vector<std::string>& segments);

  // Verb handlers (api_handlers.cc).
  HttpResponse GetObject(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                         const RequestAttributes& a);
  HttpResponse ListObjects(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                           const RequestAttributes& a);
  HttpResponse WatchObjects(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                            const RequestAttributes& a);
  HttpResponse Write(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                     const RequestAttributes& a);
  HttpResponse DeleteObjects(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                             const RequestAttributes& a);
  HttpResponse PodLog(const Query& query, const ResourceInfo& r, const RequestAttributes& a);
  // The object as the client asked for it (Table, metadata only, the requested version).
  std::string Render(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                     const ObjectPtr& object);
  bool MultiVersion(const ResourceInfo& r) const;

  void TickLoop();

  ApiServerOptions options_;
  Store store_;
  Rest rest_;
  Faults faults_;
  std::mutex address_mutex_;
  std::mutex log_reader_mutex_;
  PodLogReader log_reader_;
  std::mutex tick_mutex_;
  std::condition_variable tick_cv_;
  bool stopping_ = false;
  std::thread ticker_;
};

// Splits and percent-decodes a query string ('+' is a space, as Go's clients encode it).
std::map<std::string, std::string> ParseQuery(const std::string& raw);
std::string PercentDecode(const std::string& text, bool plus_is_space);

}  // namespace autodist::k8s
