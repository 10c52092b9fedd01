#include "operator/controller/informer.h"

#include <spdlog/spdlog.h>

#include <set>

#include "operator/kube/api_error.h"

namespace autodist::controller {
namespace {

// A watch that ends this fast without delivering anything counts as a failure, so a server that
// keeps closing watches at once is not hammered in a tight loop.
constexpr auto kShortWatch = std::chrono::seconds(1);

}  // namespace

Informer::Informer(kube::Client& client, kube::Resource resource, InformerOptions options)
    : client_(client), resource_(std::move(resource)), options_(std::move(options)) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandler(EventHandler handler) { handlers_.push_back(std::move(handler)); }

void Informer::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void Informer::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [this] { return synced_.load() || stopped_.load(); });
  return synced_.load();
}

std::string Informer::last_resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

void Informer::SetResourceVersion(const std::string& rv) {
  if (rv.empty()) return;
  std::lock_guard lock(mutex_);
  resource_version_ = rv;
}

void Informer::Pause(std::chrono::milliseconds delay, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, stop, delay, [] { return false; });
}

void Informer::Run(std::stop_token stop) {
  Backoff backoff(options_.backoff);
  bool need_list = true;
  while (!stop.stop_requested()) {
    try {
      if (need_list) {
        ListAndReplace();
        need_list = false;
        backoff.Reset();
      }
      kube::WatchOptions watch;
      watch.label_selector = options_.label_selector;
      watch.field_selector = options_.field_selector;
      watch.resource_version = last_resource_version();
      watch.allow_bookmarks = true;
      watch.timeout_seconds = options_.watch_timeout_seconds;
      ++watches_;
      bool delivered = false;
      const auto started = std::chrono::steady_clock::now();
      client_.Watch(
          resource_, options_.ns, watch,
          [&](const kube::WatchEvent& event) {
            Apply(event);
            delivered = true;
          },
          stop);
      // The server ended the watch (its timeout, a restart, a dropped connection): resume from
      // the last version seen.
      if (delivered) backoff.Reset();
      if (!delivered && std::chrono::steady_clock::now() - started < kShortWatch) {
        Pause(backoff.Next(), stop);
      }
    } catch (const std::exception& e) {
      if (stop.stop_requested()) break;
      if (kube::IsGone(e)) {
        // Our resourceVersion is older than the server's history: only a new list can tell
        // what changed meanwhile. The first relist is immediate; repeated ones back off.
        need_list = true;
        const auto delay = backoff.Next();
        spdlog::info("informer {}: {}; relisting", resource_.Name(), e.what());
        if (backoff.failures() > 1) Pause(delay, stop);
        continue;
      }
      auto delay = backoff.Next();
      if (const auto* api = dynamic_cast<const kube::ApiError*>(&e)) {
        delay = std::max<std::chrono::milliseconds>(
            delay, std::chrono::seconds(api->status().retry_after_seconds));
      }
      spdlog::warn("informer {}: {}; retrying in {} ms", resource_.Name(), e.what(), delay.count());
      Pause(delay, stop);
    }
  }
}

void Informer::ListAndReplace() {
  ++lists_;
  kube::ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  list_options.limit = options_.page_size;
  nlohmann::json list = client_.ListAll(resource_, options_.ns, list_options);
  std::set<std::string> seen;
  for (auto& item : list["items"]) {
    // List items come without apiVersion and kind; watch events carry them. Cached objects
    // look the same whichever way they arrived.
    if (!item.contains("apiVersion")) item["apiVersion"] = resource_.ApiVersion();
    if (!item.contains("kind")) item["kind"] = resource_.kind;
    const std::string key = ObjectKey(item);
    seen.insert(key);
    const std::string rv = ResourceVersionOf(item);
    if (options_.transform) item = options_.transform(item);
    const ObjectPtr previous = cache_.Upsert(item);
    if (previous == nullptr) {
      for (const auto& h : handlers_) {
        if (h.on_add) h.on_add(item);
      }
    } else if (ResourceVersionOf(*previous) != rv) {
      for (const auto& h : handlers_) {
        if (h.on_update) h.on_update(*previous, item);
      }
    }
  }
  for (const auto& key : cache_.Keys()) {
    if (seen.contains(key)) continue;
    // Deleted while we were not watching: the cache's copy is the last state known.
    if (const ObjectPtr gone = cache_.Remove(key)) {
      for (const auto& h : handlers_) {
        if (h.on_delete) h.on_delete(*gone);
      }
    }
  }
  SetResourceVersion(ResourceVersionOf(list));
  {
    std::lock_guard lock(mutex_);
    synced_ = true;
  }
  cv_.notify_all();
}

void Informer::Apply(const kube::WatchEvent& event) {
  // A transform builds the cached object from the event's; without one the event's object is
  // used as it is, so an informer without a transform copies nothing more than before.
  nlohmann::json transformed;
  if (options_.transform && event.type != kube::EventType::kBookmark) {
    transformed = options_.transform(event.object);
  }
  const nlohmann::json& object = options_.transform ? transformed : event.object;
  switch (event.type) {
    case kube::EventType::kBookmark:
      break;
    case kube::EventType::kAdded:
    case kube::EventType::kModified: {
      const ObjectPtr previous = cache_.Upsert(object);
      for (const auto& h : handlers_) {
        if (previous == nullptr && h.on_add) h.on_add(object);
        if (previous != nullptr && h.on_update) h.on_update(*previous, object);
      }
      break;
    }
    case kube::EventType::kDeleted:
      if (cache_.Remove(ObjectKey(object)) != nullptr) {
        for (const auto& h : handlers_) {
          if (h.on_delete) h.on_delete(object);
        }
      }
      break;
  }
  SetResourceVersion(ResourceVersionOf(event.object));
}

}  // namespace autodist::controller
