#include "tests/k8s/watch.h"

namespace autodist::k8s {

ObjectPtr MakeStored(nlohmann::json object, uint64_t rv) {
  auto stored = std::make_shared<StoredObject>();
  stored->json = object.dump();
  stored->object = std::move(object);
  stored->rv = rv;
  return stored;
}

Watcher::Watcher(WatchOptions options, std::shared_ptr<WatchSink> sink)
    : options_(std::move(options)), sink_(std::move(sink)) {}

bool Watcher::Selects(const ObjectPtr& object) const {
  if (object == nullptr) return false;
  const auto& meta = object->object["metadata"];
  if (!options_.ns.empty() && meta.value("namespace", "") != options_.ns) return false;
  return options_.labels.Matches(meta.contains("labels") ? meta["labels"] : nlohmann::json()) &&
         options_.fields.Matches(object->object);
}

void Watcher::Deliver(const WatchEvent& event) {
  if (stopped()) return;
  const bool now = Selects(event.object);
  if (event.type != "MODIFIED") {
    if (now) Send(event.type, event.object);
    return;
  }
  const bool before = Selects(event.previous);
  if (now && before) {
    Send("MODIFIED", event.object);
  } else if (now) {
    Send("ADDED", event.object);
  } else if (before) {
    Send("DELETED", event.object);
  }
}

void Watcher::Send(const std::string& type, const ObjectPtr& object) {
  std::string line;
  if (options_.transform) {
    line = nlohmann::json{{"type", type}, {"object", options_.transform(object->object)}}.dump();
  } else {
    line = "{\"type\":\"" + type + "\",\"object\":" + object->json + "}";
  }
  line += '\n';
  std::lock_guard lock(mutex_);
  if (stopped()) return;
  sink_->Write(line);
  ++events_sent_;
}

void Watcher::SendBookmark(uint64_t rv, bool initial_events_end) {
  nlohmann::json meta = {{"resourceVersion", std::to_string(rv)}};
  if (initial_events_end) meta["annotations"] = {{"k8s.io/initial-events-end", "true"}};
  const nlohmann::json event = {{"type", "BOOKMARK"},
                                {"object",
                                 {{"kind", options_.bookmark_kind},
                                  {"apiVersion", options_.bookmark_api_version},
                                  {"metadata", meta}}}};
  std::lock_guard lock(mutex_);
  if (stopped()) return;
  sink_->Write(event.dump() + "\n");
}

void Watcher::SendErrorAndStop(const nlohmann::json& status) {
  {
    std::lock_guard lock(mutex_);
    if (!stopped())
      sink_->Write(nlohmann::json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
  }
  Stop();
}

void Watcher::Stop() {
  std::lock_guard lock(mutex_);
  if (stopped_.exchange(true)) return;
  sink_->Close();
}

}  // namespace autodist::k8s
