// A timeline of where a process's time goes, in Chrome's trace-event format (the JSON array
// form), which Perfetto and chrome://tracing open: one "complete" event (ph "X") per span, with
// wall-clock microseconds, so the files of a job's processes line up when merged
// (timeline_merge.h). Horovod's timeline is the model.
//
// One timeline records per process at a time (ActiveTimeline); the code that has spans to show
// asks for it and records nothing while none is set, at the cost of an atomic load and of making
// the span's name (a few per step and tensor: nanoseconds against the milliseconds of a step).
// Events are buffered and streamed to the file as the run goes, so a long run does not hold its
// timeline in memory; the closing bracket is written at the end, and a file without it (a process
// that died) still opens, as the array form allows.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace autodist::observe {

class Timeline {
 public:
  // Creates (truncates) `path`; throws InvalidArgument naming it when it cannot be written.
  // `process_name` labels this process's track.
  Timeline(std::string path, const std::string& process_name);
  ~Timeline();  // Close()s; errors there are swallowed (a destructor cannot throw)
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // A span of `duration_us` from `start_us` (microseconds since the epoch) on the calling
  // thread's track. `args_json` is a JSON object's members ("\"step\":3"), or empty.
  void Complete(std::string_view category, std::string_view name, int64_t start_us,
                int64_t duration_us, std::string_view args_json = {});
  // A moment on the calling thread's track ("group-2 ready").
  void Instant(std::string_view category, std::string_view name, std::string_view args_json = {});
  // Names the calling thread's track ("training", "all-reduce").
  void NameThread(std::string_view name);

  // Writes what is buffered and the closing bracket; later events are dropped. Throws
  // InvalidArgument naming the file when a write failed (then or earlier: events are never
  // dropped silently).
  void Close();

  const std::string& path() const { return path_; }

  static int64_t NowMicros() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  void Append(const std::string& event);  // mutex_ held
  void Flush();                           // mutex_ held

  std::string path_;
  int pid_ = 0;
  std::mutex mutex_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  bool first_ = true;
  std::string failure_;  // a failed write, reported by Close()
};

// The timeline this process records into, or null.
Timeline* ActiveTimeline();
// Makes `timeline` the process's (null: none). The caller keeps it alive while it is set.
void SetActiveTimeline(Timeline* timeline);

// The time from construction to destruction, as a span on the active timeline (nothing when none
// is active at construction).
class Span {
 public:
  Span(const char* category, std::string name, std::string args_json = {})
      : timeline_(ActiveTimeline()) {
    if (timeline_ == nullptr) return;
    category_ = category;
    name_ = std::move(name);
    args_ = std::move(args_json);
    start_us_ = Timeline::NowMicros();
  }
  ~Span() {
    if (timeline_ != nullptr) {
      timeline_->Complete(category_, name_, start_us_, Timeline::NowMicros() - start_us_, args_);
    }
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  Timeline* timeline_;
  const char* category_ = "";
  std::string name_;
  std::string args_;
  int64_t start_us_ = 0;
};

}  // namespace autodist::observe
