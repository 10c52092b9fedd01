#include "runtime/observe/timeline.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "runtime/common/error.h"

namespace autodist::observe {
namespace {

std::atomic<Timeline*> active{nullptr};

// The writer streams the buffer this often, and sooner once it holds this much.
constexpr auto kWriteInterval = std::chrono::seconds(1);
constexpr size_t kWriteBytes = size_t{256} * 1024;

// Track numbers ("tid"), one counter for threads' tracks and named ones, so that they never
// share a number.
int NextTrack() {
  static std::atomic<int> next{1};
  return next.fetch_add(1);
}

// A small number per thread, stable for the thread's life: the track of its events.
int ThreadTrack() {
  thread_local const int track = NextTrack();
  return track;
}

// A JSON string. Names come from models (ONNX does not check that they are UTF-8): bytes that
// are not UTF-8 become U+FFFD instead of an exception in a span's destructor.
std::string Quoted(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string Args(std::string_view args_json) {
  return args_json.empty() ? std::string() : fmt::format(R"(,"args":{{{}}})", args_json);
}

}  // namespace

Timeline* ActiveTimeline() { return active.load(std::memory_order_acquire); }

void SetActiveTimeline(Timeline* timeline) { active.store(timeline, std::memory_order_release); }

std::unique_ptr<Timeline> StartTimeline(const std::string& path, const std::string& process_name) {
  if (path.empty()) return nullptr;
  auto timeline = std::make_unique<Timeline>(path, process_name);
  SetActiveTimeline(timeline.get());
  return timeline;
}

void FinishTimeline(Timeline* timeline, const std::string& who) {
  if (timeline == nullptr) return;
  if (ActiveTimeline() == timeline) SetActiveTimeline(nullptr);
  try {
    timeline->Close();
  } catch (const Error& error) {
    std::cerr << who << ": warning: " << error.what() << std::endl;
  }
}

Timeline::Timeline(std::string path, const std::string& process_name)
    : path_(std::move(path)), pid_(static_cast<int>(getpid())) {
  file_ = std::fopen(path_.c_str(), "w");
  AD_CHECK(file_ != nullptr, kInvalidArgument, "timeline {}: cannot create it: {}", path_,
           std::strerror(errno));
  // The first event goes to the file at once: even a member killed at once leaves a timeline.
  Write(
      fmt::format("[\n{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,"
                  "\"args\":{{\"name\":{}}}}}",
                  pid_, Quoted(process_name)));
  if (!failure_.empty()) {
    std::fclose(file_);
    throw Error(ErrorCode::kInvalidArgument, failure_);
  }
  writer_ = std::thread([this] { WriterLoop(); });
}

Timeline::~Timeline() {
  if (ActiveTimeline() == this) SetActiveTimeline(nullptr);
  try {
    Close();
  } catch (const Error&) {
    // The run's own outcome matters more than its timeline; callers that care call Close().
  }
}

void Timeline::Complete(std::string_view category, std::string_view name, int64_t start_us,
                        int64_t duration_us, std::string_view args_json) {
  CompleteOn(ThreadTrack(), category, name, start_us, duration_us, args_json);
}

void Timeline::CompleteOn(int track, std::string_view category, std::string_view name,
                          int64_t start_us, int64_t duration_us, std::string_view args_json) {
  Append(fmt::format(R"({{"ph":"X","cat":{},"name":{},"pid":{},"tid":{},"ts":{},"dur":{}{}}})",
                     Quoted(category), Quoted(name), pid_, track, start_us, duration_us,
                     Args(args_json)));
}

void Timeline::Instant(std::string_view category, std::string_view name,
                       std::string_view args_json) {
  InstantOn(ThreadTrack(), category, name, NowMicros(), args_json);
}

void Timeline::InstantOn(int track, std::string_view category, std::string_view name, int64_t at_us,
                         std::string_view args_json) {
  Append(fmt::format(R"({{"ph":"i","s":"t","cat":{},"name":{},"pid":{},"tid":{},"ts":{}{}}})",
                     Quoted(category), Quoted(name), pid_, track, at_us, Args(args_json)));
}

void Timeline::NameThread(std::string_view name) {
  Append(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     pid_, ThreadTrack(), Quoted(name)));
}

int Timeline::Track(std::string_view name) {
  const std::lock_guard lock(tracks_mutex_);
  if (const auto found = tracks_.find(name); found != tracks_.end()) return found->second;
  const int track = NextTrack();
  tracks_.emplace(std::string(name), track);
  // Named under the lock: no event of the track's reaches the buffer before its name.
  Append(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     pid_, track, Quoted(name)));
  return track;
}

void Timeline::Append(const std::string& event) {
  std::lock_guard lock(mutex_);
  if (closing_) return;
  buffer_ += ",\n";
  buffer_ += event;
  if (buffer_.size() >= kWriteBytes) wake_.notify_one();
}

void Timeline::WriterLoop() {
  std::unique_lock lock(mutex_);
  while (!closing_) {
    wake_.wait_for(lock, kWriteInterval,
                   [this] { return closing_ || buffer_.size() >= kWriteBytes; });
    if (closing_) break;  // Close() writes the rest
    std::string pending = std::exchange(buffer_, {});
    lock.unlock();
    {
      std::lock_guard file_lock(file_mutex_);
      Write(pending);
    }
    lock.lock();
  }
}

void Timeline::Write(const std::string& bytes) {
  if (bytes.empty() || file_ == nullptr || !failure_.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size() ||
      std::fflush(file_) != 0) {
    failure_ = fmt::format("timeline {}: write failed: {}", path_, std::strerror(errno));
  }
}

void Timeline::Close() {
  std::string rest;
  {
    std::lock_guard lock(mutex_);
    if (closing_) return;
    closing_ = true;
    rest = std::exchange(buffer_, {});
  }
  wake_.notify_one();
  if (writer_.joinable()) writer_.join();
  std::lock_guard file_lock(file_mutex_);
  Write(rest + "\n]\n");
  if (file_ != nullptr && std::fclose(file_) != 0 && failure_.empty()) {
    failure_ = fmt::format("timeline {}: closing failed: {}", path_, std::strerror(errno));
  }
  file_ = nullptr;
  if (!failure_.empty()) throw Error(ErrorCode::kInvalidArgument, std::exchange(failure_, {}));
}

}  // namespace autodist::observe
