// Shared by the launcher's process tests: a private temporary directory per test (so ctest can
// run them in parallel) and checks on whether a process still exists.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "runtime/common/error.h"

namespace autodist::launcher {

// A directory of its own, removed with everything in it when the object goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "autodist_launcher_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// How many times `needle` occurs in `text` (overlapping occurrences too).
inline size_t CountOccurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// True while `pid` is a process that still runs. A zombie counts as gone: it has run its course,
// and a grandchild whose parent died is reaped by init, which in a container may never happen.
inline bool ProcessAlive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

// Waits (generously) for `pid` to be gone; returns whether it is.
inline bool WaitUntilGone(pid_t pid, std::chrono::seconds deadline = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (ProcessAlive(pid)) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Runs `action` and returns the autodist::Error it throws; fails the test when it throws none.
template <typename Action>
Error ErrorOf(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "expected an autodist::Error";
  return Error(ErrorCode::kInternal, "no error");
}

}  // namespace autodist::launcher
