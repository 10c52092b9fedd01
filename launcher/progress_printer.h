// Prints the progress line of `autodist run`: rewritten in place on a terminal, and on anything
// else (CI logs, files) printed as a plain line every so often, so logs stay readable.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "launcher/progress_line.h"

namespace autodist::launcher {

struct ProgressPrinterOptions {
  bool live = false;  // rewrite one line in place ("\r" + clear line): for a terminal
  std::chrono::milliseconds plain_interval{10000};  // not live: print at most this often
  size_t width = 0;  // live: cut the line to fit this many columns; 0: no limit

  // Live when standard output is a terminal (and TERM is not "dumb"), cut to its width.
  static ProgressPrinterOptions ForStandardOutput();
};

// Thread-safe: log lines echoed from the process group's reader thread go through PrintLine
// while the run loop calls Update.
class ProgressPrinter {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressPrinter(std::ostream& out, ProgressPrinterOptions options);

  // Shows a new snapshot. Live: redraws the line. Plain: prints it when plain_interval has passed
  // since the last printed one (the first is printed at once). Ignored after Finish.
  void Update(const ProgressSnapshot& snapshot, Clock::time_point now = Clock::now());

  // Prints other text (an echoed log line, a warning) as its own line; a live progress line is
  // cleared first and redrawn below it.
  void PrintLine(std::string_view line);

  // Ends the progress output. Live: the last line stays on screen, followed by a newline. Plain:
  // the latest snapshot is printed unless it already was. Later calls do nothing.
  void Finish();

 private:
  std::string Fit(const std::string& line) const;  // cut to the width in live mode

  std::ostream& out_;
  const ProgressPrinterOptions options_;
  std::mutex mutex_;
  std::string latest_;  // the latest rendered snapshot
  bool latest_printed_ = false;
  bool on_screen_ = false;  // live: the cursor is at the end of a drawn progress line
  std::optional<Clock::time_point> last_printed_at_;
  bool finished_ = false;
};

}  // namespace autodist::launcher
