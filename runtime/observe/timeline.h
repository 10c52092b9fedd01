// A timeline of where a process's time goes, in Chrome's trace-event format (the JSON array
// form), which Perfetto and chrome://tracing open: one "complete" event (ph "X") per span, with
// wall-clock microseconds, so the files of a job's processes line up when merged
// (timeline_merge.h). Horovod's timeline is the model.
//
// One timeline records per process at a time (ActiveTimeline); code with spans to show asks for
// it and does nothing else while none is set: a span's name is made only while one records.
// Recording threads only append to a buffer; a writer thread of the timeline's own streams it to
// the file every second, so no recording thread waits on the disk (some record while holding
// locks) and a long run does not hold its timeline in memory. The closing bracket comes at the
// end; a file without it (a process that was killed) still opens, as the array form allows, and
// loses at most its last second.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>

namespace autodist::observe {

class Timeline {
 public:
  // Creates (truncates) `path` and writes its first event; throws InvalidArgument naming it when
  // it cannot be written. `process_name` labels this process's track.
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

  // A track of its own, apart from every thread's: what happened elsewhere, at times measured
  // elsewhere (a GPU stream's work, "cuda:0 stream comm"). Named on first use; the same name
  // gives the same track for the timeline's life.
  int Track(std::string_view name);
  // A span of `duration_us` from `start_us` (microseconds since the epoch) on `track` (Track's).
  void CompleteOn(int track, std::string_view category, std::string_view name, int64_t start_us,
                  int64_t duration_us, std::string_view args_json = {});
  // A moment at `at_us` (microseconds since the epoch) on `track` (Track's).
  void InstantOn(int track, std::string_view category, std::string_view name, int64_t at_us,
                 std::string_view args_json = {});

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
  void Append(const std::string& event);
  void WriterLoop();
  // Writes `bytes` (file_mutex_ held); remembers a failure for Close().
  void Write(const std::string& bytes);

  std::string path_;
  int pid_ = 0;
  std::mutex mutex_;  // guards buffer_ and closing_
  std::condition_variable wake_;
  std::string buffer_;
  bool closing_ = false;
  std::mutex file_mutex_;  // guards file_ and failure_; taken after mutex_ is released
  std::FILE* file_ = nullptr;
  std::string failure_;  // a failed write, reported by Close()
  std::thread writer_;
  std::mutex tracks_mutex_;                         // guards tracks_
  std::map<std::string, int, std::less<>> tracks_;  // Track's, by name
};

// The timeline this process records into, or null.
Timeline* ActiveTimeline();
// Makes `timeline` the process's (null: none). The caller keeps it alive while it is set.
void SetActiveTimeline(Timeline* timeline);

// A timeline recording into `path` as the process's active one; null when `path` is empty.
// Throws as the Timeline constructor does.
std::unique_ptr<Timeline> StartTimeline(const std::string& path, const std::string& process_name);
// Makes `timeline` (if any) no longer the active one and closes it. A failed write becomes a
// warning on standard error, prefixed by `who`: the outcome of the run it recorded stands.
void FinishTimeline(Timeline* timeline, const std::string& who);

// A span's name and its arguments (a JSON object's members, or empty).
struct SpanText {
  std::string name;
  std::string args_json;
};

// The time from construction to destruction, as a span on the active timeline (nothing when none
// is active at construction).
class Span {
 public:
  // A fixed name.
  Span(const char* category, const char* name) : timeline_(ActiveTimeline()) {
    if (timeline_ != nullptr) Begin(category, SpanText{name, {}});
  }
  // A name made by `describe` (returning SpanText), called only while a timeline records.
  template <typename Describe>
  requires std::is_invocable_r_v<SpanText, Describe> Span(const char* category, Describe&& describe)
      : timeline_(ActiveTimeline()) {
    if (timeline_ != nullptr) Begin(category, std::forward<Describe>(describe)());
  }
  ~Span() {
    if (timeline_ != nullptr) {
      timeline_->Complete(category_, text_.name, start_us_, Timeline::NowMicros() - start_us_,
                          text_.args_json);
    }
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  void Begin(const char* category, SpanText text) {
    category_ = category;
    text_ = std::move(text);
    start_us_ = Timeline::NowMicros();
  }

  Timeline* timeline_;
  const char* category_ = "";
  SpanText text_;
  int64_t start_us_ = 0;
};

}  // namespace autodist::observe
