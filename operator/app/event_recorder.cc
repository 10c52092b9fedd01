#include "operator/app/event_recorder.h"

#include <optional>

#include "operator/app/log.h"
#include "operator/kube/api_error.h"
#include "operator/kube/resource.h"
#include "runtime/common/rfc3339.h"

namespace autodist::app {
namespace {

std::string JobLabel(const nlohmann::json& metadata) {
  return metadata.value("namespace", "default") + "/" + metadata.value("name", "");
}

}  // namespace

EventRecorder::EventRecorder(kube::Client& client, size_t capacity, Clock clock)
    : client_(client),
      capacity_(std::max<size_t>(capacity, 1)),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::system_clock::now(); })) {}

void EventRecorder::Record(const nlohmann::json& job, const reconcile::Event& event) {
  const nlohmann::json& metadata = job.at("metadata");
  const std::string now = FormatRfc3339(clock_());
  // The key of client-go's EventLogger: the involved object, the type, the reason, the message
  // (and the source, which is always this operator).
  const std::string key = metadata.value("uid", JobLabel(metadata)) + '\n' + event.type + '\n' +
                          event.reason + '\n' + event.message;
  std::optional<Written> repeat;
  {
    const std::lock_guard lock(mutex_);
    if (const auto found = written_.find(key); found != written_.end()) repeat = found->second;
  }
  if (repeat.has_value()) {
    const int count = repeat->count + 1;
    try {
      client_.Patch(kube::resources::kEvents, repeat->ns, repeat->name,
                    {{"count", count}, {"lastTimestamp", now}});
      repeat->count = count;
      Remember(key, *repeat);
      return;
    } catch (const std::exception& e) {
      // Events expire (an hour by default): a repeat after that is a new Event.
      if (!kube::IsNotFound(e)) {
        Log(spdlog::level::warn, "event not recorded",
            {{"job", JobLabel(metadata)}, {"reason", event.reason}, {"error", e.what()}});
        return;
      }
    }
  }
  const std::string name = Create(job, event, now);
  if (!name.empty()) {
    Remember(key, Written{metadata.value("namespace", "default"), name, 1, {}});
  }
}

std::string EventRecorder::Create(const nlohmann::json& job, const reconcile::Event& event,
                                  const std::string& now) {
  const nlohmann::json& metadata = job.at("metadata");
  const std::string ns = metadata.value("namespace", "default");
  const nlohmann::json object = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"generateName", metadata.at("name").get<std::string>() + "."}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", job.value("apiVersion", "autodist.io/v1alpha1")},
        {"kind", job.value("kind", "AutoDistJob")},
        {"name", metadata.at("name")},
        {"namespace", ns},
        {"uid", metadata.value("uid", "")},
        {"resourceVersion", metadata.value("resourceVersion", "")}}},
      {"reason", event.reason},
      {"message", event.message},
      {"type", event.type},
      {"source", {{"component", "autodist-operator"}}},
      {"reportingComponent", "autodist-operator"},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
  };
  try {
    const nlohmann::json created = client_.Create(kube::resources::kEvents, ns, object);
    return created.value("/metadata/name"_json_pointer, std::string());
  } catch (const std::exception& e) {
    Log(spdlog::level::warn, "event not recorded",
        {{"job", JobLabel(metadata)}, {"reason", event.reason}, {"error", e.what()}});
    return "";
  }
}

void EventRecorder::Remember(const std::string& key, Written written) {
  const std::lock_guard lock(mutex_);
  if (const auto found = written_.find(key); found != written_.end()) {
    recency_.erase(found->second.recency);
    written_.erase(found);
  }
  recency_.push_front(key);
  written.recency = recency_.begin();
  written_.emplace(key, std::move(written));
  while (written_.size() > capacity_) {
    written_.erase(recency_.back());
    recency_.pop_back();
  }
}

size_t EventRecorder::remembered() const {
  const std::lock_guard lock(mutex_);
  return written_.size();
}

}  // namespace autodist::app
