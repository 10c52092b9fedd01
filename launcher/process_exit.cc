#include "launcher/process_exit.h"

#include <fmt/format.h>

#include <cstring>

namespace autodist::launcher {

std::string SignalName(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  if (abbreviation == nullptr) return fmt::format("signal {}", signal);
  return fmt::format("SIG{}", abbreviation);
}

std::string DescribeExit(const ProcessExit& exit) {
  std::string text;
  if (exit.signal != 0) {
    text = fmt::format("{} was killed by {}", exit.name, SignalName(exit.signal));
  } else if (exit.exit_code != 0) {
    text = fmt::format("{} exited with code {}", exit.name, exit.exit_code);
  } else {
    text = fmt::format("{} exited normally", exit.name);
  }
  if (exit.stopped) text += " after being asked to stop";
  return text;
}

std::string FailureReport(const ProcessExit& exit, const std::string& log_path,
                          const std::vector<std::string>& last_lines) {
  std::string text = DescribeExit(exit);
  if (last_lines.empty()) {
    text += fmt::format("; it wrote nothing (log: {})", log_path);
  } else {
    text += fmt::format("; last lines of {}:", log_path);
    for (const std::string& line : last_lines) text += fmt::format("\n  [{}] {}", exit.name, line);
  }
  if (!exit.log_error.empty())
    text += fmt::format("\n(the log file is incomplete: {})", exit.log_error);
  return text;
}

}  // namespace autodist::launcher
