#include "runtime/observe/timeline.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::observe {
namespace {

std::atomic<Timeline*> active{nullptr};

// Streamed in pieces of this size: a write per few hundred events.
constexpr size_t kFlushBytes = 64 * 1024;

// A small number per thread, stable for the thread's life: the track ("tid") of its events.
int ThreadTrack() {
  static std::atomic<int> next{1};
  thread_local const int track = next.fetch_add(1);
  return track;
}

std::string Quoted(std::string_view text) { return nlohmann::json(std::string(text)).dump(); }

}  // namespace

Timeline* ActiveTimeline() { return active.load(std::memory_order_acquire); }

void SetActiveTimeline(Timeline* timeline) { active.store(timeline, std::memory_order_release); }

Timeline::Timeline(std::string path, const std::string& process_name)
    : path_(std::move(path)), pid_(static_cast<int>(getpid())) {
  file_ = std::fopen(path_.c_str(), "w");
  AD_CHECK(file_ != nullptr, kInvalidArgument, "timeline {}: cannot create it: {}", path_,
           std::strerror(errno));
  buffer_ = "[\n";
  std::lock_guard lock(mutex_);
  Append(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})",
                     pid_, Quoted(process_name)));
}

Timeline::~Timeline() {
  if (ActiveTimeline() == this) SetActiveTimeline(nullptr);
  try {
    Close();
  } catch (const Error&) {
    // The run's own outcome matters more than its timeline; Close() named the file if called.
  }
}

void Timeline::Complete(std::string_view category, std::string_view name, int64_t start_us,
                        int64_t duration_us, std::string_view args_json) {
  const std::string event =
      fmt::format(R"({{"ph":"X","cat":{},"name":{},"pid":{},"tid":{},"ts":{},"dur":{}{}}})",
                  Quoted(category), Quoted(name), pid_, ThreadTrack(), start_us, duration_us,
                  args_json.empty() ? std::string() : fmt::format(R"(,"args":{{{}}})", args_json));
  std::lock_guard lock(mutex_);
  Append(event);
}

void Timeline::Instant(std::string_view category, std::string_view name,
                       std::string_view args_json) {
  const std::string event =
      fmt::format(R"({{"ph":"i","s":"t","cat":{},"name":{},"pid":{},"tid":{},"ts":{}{}}})",
                  Quoted(category), Quoted(name), pid_, ThreadTrack(), NowMicros(),
                  args_json.empty() ? std::string() : fmt::format(R"(,"args":{{{}}})", args_json));
  std::lock_guard lock(mutex_);
  Append(event);
}

void Timeline::NameThread(std::string_view name) {
  const std::string event =
      fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                  pid_, ThreadTrack(), Quoted(name));
  std::lock_guard lock(mutex_);
  Append(event);
}

void Timeline::Append(const std::string& event) {
  if (file_ == nullptr) return;  // closed
  if (!first_) buffer_ += ",\n";
  first_ = false;
  buffer_ += event;
  if (buffer_.size() >= kFlushBytes) Flush();
}

void Timeline::Flush() {
  if (buffer_.empty() || file_ == nullptr) return;
  const size_t written = std::fwrite(buffer_.data(), 1, buffer_.size(), file_);
  const bool ok = written == buffer_.size() && std::fflush(file_) == 0;
  buffer_.clear();
  if (!ok) {
    // Spans end in destructors, which must not throw: the failure waits for Close().
    failure_ = fmt::format("timeline {}: write failed: {}", path_, std::strerror(errno));
    std::fclose(file_);
    file_ = nullptr;
  }
}

void Timeline::Close() {
  std::lock_guard lock(mutex_);
  if (file_ != nullptr) {
    buffer_ += "\n]\n";
    Flush();
    if (file_ != nullptr && std::fclose(file_) != 0 && failure_.empty()) {
      failure_ = fmt::format("timeline {}: closing failed: {}", path_, std::strerror(errno));
    }
    file_ = nullptr;
  }
  if (!failure_.empty()) throw Error(ErrorCode::kInvalidArgument, std::exchange(failure_, {}));
}

}  // namespace autodist::observe
