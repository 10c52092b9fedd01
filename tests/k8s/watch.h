// One open watch: filters the events of a resource and writes them, newline-delimited JSON
// {"type":..., "object":...}, to a sink the transport streams to the client.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tests/k8s/selectors.h"

namespace autodist::k8s {

// A stored object with its serialized form cached, so lists and watches that ask for the object
// as stored never re-encode it.
struct StoredObject {
  nlohmann::json object;
  std::string json;
  uint64_t rv = 0;
};
using ObjectPtr = std::shared_ptr<const StoredObject>;

// Builds a StoredObject; `rv` must be what object.metadata.resourceVersion holds.
ObjectPtr MakeStored(nlohmann::json object, uint64_t rv);

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED
  ObjectPtr object;
  ObjectPtr previous;  // the state before a MODIFIED; null otherwise
  uint64_t rv = 0;
};

// Where a watch's bytes go. Write must not block: the store calls it while holding its lock.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void Write(const std::string& data) = 0;
  // Ends the response; later writes are dropped.
  virtual void Close() = 0;
  // Bytes written but not yet taken by the client (slow-watcher detection).
  virtual size_t Backlog() const = 0;
};

struct WatchOptions {
  std::string ns;  // "" = all namespaces
  LabelSelector labels;
  FieldSelector fields;
  bool bookmarks = false;
  std::optional<std::chrono::steady_clock::time_point> deadline;  // timeoutSeconds
  // Re-encodes an object for this client (Table rows, metadata only, another CRD version);
  // null sends the object as stored.
  std::function<nlohmann::json(const nlohmann::json& object)> transform;
  // apiVersion and kind of the BOOKMARK objects (the watched kind or a Table).
  std::string bookmark_api_version;
  std::string bookmark_kind;
};

class Watcher {
 public:
  Watcher(WatchOptions options, std::shared_ptr<WatchSink> sink);

  // Sends the event if it concerns this watch; a MODIFIED that moves an object into or out of
  // the selection becomes ADDED or DELETED, as on the real server.
  void Deliver(const WatchEvent& event);
  // BOOKMARK at `rv`; `initial_events_end` adds the k8s.io/initial-events-end annotation.
  void SendBookmark(uint64_t rv, bool initial_events_end);
  // An ERROR event with a Status object, then the end of the stream.
  void SendErrorAndStop(const nlohmann::json& status);
  void Stop();

  bool stopped() const { return stopped_.load(); }
  bool wants_bookmarks() const { return options_.bookmarks; }
  bool Expired(std::chrono::steady_clock::time_point now) const {
    return options_.deadline.has_value() && now >= *options_.deadline;
  }
  size_t Backlog() const { return sink_->Backlog(); }
  uint64_t events_sent() const { return events_sent_.load(); }

 private:
  bool Selects(const ObjectPtr& object) const;
  void Send(const std::string& type, const ObjectPtr& object);

  WatchOptions options_;
  std::shared_ptr<WatchSink> sink_;
  std::mutex mutex_;  // orders writes from the store and from the bookmark ticker
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> events_sent_{0};
};

}  // namespace autodist::k8s
