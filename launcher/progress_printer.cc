#include "launcher/progress_printer.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace autodist::launcher {
namespace {

// Carriage return, then ANSI "erase to end of line": the terminal line is blank again.
constexpr std::string_view kClearLine = "\r\033[K";

}  // namespace

ProgressPrinterOptions ProgressPrinterOptions::ForStandardOutput() {
  ProgressPrinterOptions options;
  const char* term = std::getenv("TERM");
  options.live = isatty(STDOUT_FILENO) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
  winsize size{};
  if (options.live && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) options.width = size.ws_col;
  return options;
}

ProgressPrinter::ProgressPrinter(std::ostream& out, ProgressPrinterOptions options)
    : out_(out), options_(options) {}

std::string ProgressPrinter::Fit(const std::string& line) const {
  // One column short of the width: writing the last column makes some terminals wrap, and then
  // "\r" no longer returns to the progress line.
  if (!options_.live || options_.width == 0 || line.size() < options_.width) return line;
  return line.substr(0, options_.width - 1);
}

void ProgressPrinter::Update(const ProgressSnapshot& snapshot, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  latest_ = FormatProgress(snapshot);
  latest_printed_ = false;
  if (options_.live) {
    out_ << kClearLine << Fit(latest_) << std::flush;
    on_screen_ = true;
    latest_printed_ = true;
    return;
  }
  if (last_printed_at_ && now - *last_printed_at_ < options_.plain_interval) return;
  out_ << latest_ << '\n' << std::flush;
  last_printed_at_ = now;
  latest_printed_ = true;
}

void ProgressPrinter::PrintLine(std::string_view line) {
  std::lock_guard lock(mutex_);
  if (on_screen_) out_ << kClearLine;
  out_ << line << '\n';
  if (on_screen_) out_ << Fit(latest_);
  out_ << std::flush;
}

void ProgressPrinter::Finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (on_screen_) {
    out_ << '\n' << std::flush;
    on_screen_ = false;
  } else if (!latest_printed_ && !latest_.empty()) {
    out_ << latest_ << '\n' << std::flush;
  }
}

}  // namespace autodist::launcher
