// Client::Watch: the chunked stream of newline-delimited JSON events a watch answers with.
#include <string_view>

#include "operator/kube/api_error.h"
#include "operator/kube/client.h"
#include "operator/kube/http_transport.h"
#include "operator/kube/url.h"
#include "runtime/common/error.h"

namespace autodist::kube {
namespace {

// A watch without timeoutSeconds is ended by the server after its default (30–60 minutes);
// the HTTP timeout only has to outlast that.
constexpr auto kUnboundedWatch = std::chrono::hours(2);
// Slack for the server to close the stream after timeoutSeconds before we give up on it.
constexpr auto kWatchGrace = std::chrono::seconds(30);

EventType ParseType(const std::string& what, const std::string& type) {
  if (type == "ADDED") return EventType::kAdded;
  if (type == "MODIFIED") return EventType::kModified;
  if (type == "DELETED") return EventType::kDeleted;
  if (type == "BOOKMARK") return EventType::kBookmark;
  Fail(ErrorCode::kUnavailable, "{}: unknown watch event type '{}'", what, type);
}

}  // namespace

void Client::Watch(const Resource& r, const std::string& ns, const WatchOptions& options,
                   const std::function<void(const WatchEvent&)>& on_event, std::stop_token stop) {
  Query query;
  query.Add("watch", "true")
      .Add("labelSelector", options.label_selector)
      .Add("fieldSelector", options.field_selector)
      .Add("resourceVersion", options.resource_version)
      .Add("allowWatchBookmarks", options.allow_bookmarks ? "true" : "")
      .Add("timeoutSeconds",
           options.timeout_seconds > 0 ? std::to_string(options.timeout_seconds) : "");
  const std::string path = r.Path(ns) + query.str();
  const std::string what = "watch " + path;
  const std::chrono::milliseconds timeout =
      options.timeout_seconds > 0
          ? std::chrono::milliseconds(std::chrono::seconds(options.timeout_seconds) + kWatchGrace)
          : std::chrono::milliseconds(kUnboundedWatch);

  std::string pending;  // an event split across chunks
  const auto on_data = [&](std::string_view data) {
    pending.append(data);
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string_view line(pending.data() + start, end - start);
      if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
      nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
      AD_CHECK(event.is_object() && event.contains("type") && event["type"].is_string(),
               kUnavailable, "{}: not a watch event: {}", what, std::string(line.substr(0, 200)));
      const std::string type = event["type"];
      if (type == "ERROR") {
        // The server ends the watch with a Status: 410 Expired/Gone when the resourceVersion
        // was compacted away, for one.
        ThrowApiError(what, event["object"].value("code", 500), event["object"].dump());
      }
      on_event(WatchEvent{ParseType(what, type), std::move(event["object"])});
    }
    pending.erase(0, start);
  };
  const auto started = std::chrono::steady_clock::now();
  HttpResult result;
  try {
    result = transport_->Stream(path, timeout, on_data, stop);
  } catch (const ApiError& e) {
    Observe("watch", r, e.http_code(), started);
    throw;
  } catch (const Error& e) {
    // An exception from on_event is the caller's; only a transport failure counts as an
    // API error.
    Observe("watch", r, e.code() == ErrorCode::kUnavailable ? 0 : 200, started);
    throw;
  }
  Observe("watch", r, result.status, started);
  if (result.status != 200) ThrowApiError(what, result.status, result.body, result.retry_after);
}

}  // namespace autodist::kube
