// The log of one child process of `autodist run`: its output cut into lines, each written to the
// process's log file as "[<name>] <line>", the most recent lines kept in memory (so a failure
// message can quote them), and each optionally echoed to a sink (the launcher's --verbose).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace autodist::launcher {

// Receives one line of a process's output (without the newline). Called on the thread that reads
// the output, never while a lock of ours is held.
using LineSink = std::function<void(std::string_view process_name, std::string_view line)>;

class ProcessLog {
 public:
  // A line longer than this is cut into pieces, so a process that never writes a newline cannot
  // make us buffer without bound.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  // Creates (or truncates) the log file at `path`; throws autodist::Error naming the path when it
  // cannot be opened. Keeps the last `kept_lines` lines in memory.
  ProcessLog(std::string name, std::string path, size_t kept_lines, LineSink echo);
  ~ProcessLog();
  ProcessLog(const ProcessLog&) = delete;
  ProcessLog& operator=(const ProcessLog&) = delete;

  // Adds output bytes as they arrive; complete lines are written, kept and echoed. Called by one
  // thread at a time.
  void Append(std::string_view bytes);

  // The output has ended: a last line without a newline is written too, and the file is closed.
  // Further Append calls are ignored.
  void Finish();

  // The last `n` lines (fewer if there were fewer), oldest first, without prefix or newline.
  // Safe to call from any thread while another appends.
  std::vector<std::string> LastLines(size_t n) const;

  // The first error writing the log file ("" when none). After one, lines are still kept and
  // echoed but no longer written.
  std::string WriteError() const;

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }

 private:
  // Writes, keeps and echoes the complete lines in `lines`.
  void Emit(const std::vector<std::string>& lines);

  const std::string name_;
  const std::string path_;
  const size_t kept_lines_;
  const LineSink echo_;
  int fd_ = -1;
  bool finished_ = false;
  std::string partial_;  // bytes after the last newline

  mutable std::mutex mutex_;  // guards kept_ and write_error_, which other threads read
  std::deque<std::string> kept_;
  std::string write_error_;
};

}  // namespace autodist::launcher
