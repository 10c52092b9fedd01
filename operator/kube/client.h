// A generic Kubernetes REST client over resource descriptors (resource.h): objects are
// nlohmann::json as the API server sends them. Every call is synchronous and thread-safe; a
// failed call throws ApiError (api_error.h) carrying the HTTP code and the Status reason, or
// autodist::Error kUnavailable when the server could not be reached.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>

#include "operator/kube/config.h"
#include "operator/kube/resource.h"

namespace autodist::kube {

class HttpTransport;

struct ClientOptions {
  std::chrono::milliseconds request_timeout{std::chrono::seconds(30)};
  std::string user_agent = "autodist-operator";
  // Called after every request with its verb ("get", "list", "create", ...), the resource, the
  // HTTP status (0 when the server could not be reached) and the latency. The operator counts
  // API errors through this; it must be cheap and must not throw.
  std::function<void(const std::string& verb, const Resource& resource, int code,
                     std::chrono::duration<double> latency)>
      observer;
};

struct ListOptions {
  std::string label_selector;  // "app=x,tier in (a,b)"
  std::string field_selector;
  std::string resource_version;  // "" = most recent (quorum read), "0" = any cached
  long limit = 0;                // page size; 0 = everything at once
  std::string continue_token;    // from the previous page's metadata.continue
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Background", "Foreground" or "Orphan"
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
};

enum class EventType { kAdded, kModified, kDeleted, kBookmark };

struct WatchEvent {
  EventType type;
  nlohmann::json object;  // for a bookmark only metadata.resourceVersion is meaningful
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // start after this version ("" = current state as ADDED first)
  bool allow_bookmarks = true;
  int timeout_seconds = 0;  // the server ends the watch after this long; 0 = its default
};

class Client {
 public:
  // Throws autodist::Error (kInvalidArgument) when the config's TLS material is unusable.
  explicit Client(Config config, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Config& config() const { return config_; }
  const std::string& default_namespace() const { return config_.ns; }

  nlohmann::json Get(const Resource& r, const std::string& ns, const std::string& name);
  // One page: a *List object (items, metadata.resourceVersion, metadata.continue).
  nlohmann::json List(const Resource& r, const std::string& ns, const ListOptions& options = {});
  // Every page of a paginated list, items concatenated; metadata.resourceVersion is the first
  // page's (the snapshot all pages belong to).
  nlohmann::json ListAll(const Resource& r, const std::string& ns, ListOptions options = {});
  nlohmann::json Create(const Resource& r, const std::string& ns, const nlohmann::json& object);
  // PUT of the whole object (metadata.namespace/name locate it; metadata.resourceVersion, when
  // set, makes it conditional: 409 Conflict if the object changed since).
  nlohmann::json Update(const Resource& r, const nlohmann::json& object);
  // PUT to the /status subresource: only the status is written.
  nlohmann::json UpdateStatus(const Resource& r, const nlohmann::json& object);
  // JSON merge patch (RFC 7386); `status` patches the /status subresource.
  nlohmann::json Patch(const Resource& r, const std::string& ns, const std::string& name,
                       const nlohmann::json& merge_patch, bool status = false);
  // Returns the object as deleted, or as marked for deletion when finalizers hold it.
  nlohmann::json Delete(const Resource& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& options = {});

  // Streams the watch's events to `on_event` (on the calling thread) until the server ends the
  // stream (timeoutSeconds, or the connection was dropped: the caller re-watches from the last
  // resourceVersion it saw) or `stop` is requested; either way it returns normally. A non-200
  // answer or an ERROR event throws ApiError with its Status, e.g. 410 Gone when
  // resource_version is too old (the caller relists). Exceptions from on_event propagate.
  void Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
             const std::function<void(const WatchEvent&)>& on_event, std::stop_token stop);

 private:
  // Sends and checks: the parsed body of a 2xx answer, else throws ApiError.
  nlohmann::json Call(const std::string& verb, const Resource& r, const std::string& method,
                      const std::string& path, const std::string& body = "",
                      const std::string& content_type = "application/json");
  void Observe(const std::string& verb, const Resource& r, int code,
               std::chrono::steady_clock::time_point start);

  Config config_;
  ClientOptions options_;
  std::unique_ptr<HttpTransport> transport_;
};

// The metav1.Status in `body` (or the best the client can make of a non-Status body) as an
// ApiError naming `what`; thrown by Client for every non-2xx answer.
[[noreturn]] void ThrowApiError(const std::string& what, int http_code, const std::string& body,
                                const std::string& retry_after = "");

}  // namespace autodist::kube
