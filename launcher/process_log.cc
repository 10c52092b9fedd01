#include "launcher/process_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::launcher {
namespace {

// Writes all of `text` to `fd`; returns 0 or the errno of the failure.
int WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t written = write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<size_t>(written));
  }
  return 0;
}

// Appends `line` to `lines`, without a trailing carriage return (CRLF output), cut into pieces
// of at most kMaxLineBytes.
void AddLine(std::string_view line, std::vector<std::string>& lines) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  do {
    const std::string_view piece = line.substr(0, ProcessLog::kMaxLineBytes);
    lines.emplace_back(piece);
    line.remove_prefix(piece.size());
  } while (!line.empty());
}

}  // namespace

ProcessLog::ProcessLog(std::string name, std::string path, size_t kept_lines, LineSink echo)
    : name_(std::move(name)),
      path_(std::move(path)),
      kept_lines_(kept_lines),
      echo_(std::move(echo)) {
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  AD_CHECK(fd_ >= 0, kInvalidArgument, "cannot create the log file '{}' of process '{}': {}", path_,
           name_, std::strerror(errno));
}

ProcessLog::~ProcessLog() {
  if (fd_ >= 0) close(fd_);
}

void ProcessLog::Append(std::string_view bytes) {
  if (finished_) return;
  std::vector<std::string> lines;
  for (size_t newline = bytes.find('\n'); newline != std::string_view::npos;
       newline = bytes.find('\n')) {
    if (partial_.empty()) {
      AddLine(bytes.substr(0, newline), lines);
    } else {
      partial_.append(bytes.substr(0, newline));
      AddLine(partial_, lines);
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
  partial_.append(bytes);
  if (partial_.size() >= kMaxLineBytes) {
    // Keep only the tail that does not fill a whole piece; it may still grow into a line.
    const size_t whole = partial_.size() - partial_.size() % kMaxLineBytes;
    AddLine(std::string_view(partial_).substr(0, whole), lines);
    partial_.erase(0, whole);
  }
  Emit(lines);
}

void ProcessLog::Finish() {
  if (finished_) return;
  if (!partial_.empty()) {
    std::vector<std::string> lines;
    AddLine(partial_, lines);
    partial_.clear();
    Emit(lines);
  }
  finished_ = true;
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
}

void ProcessLog::Emit(const std::vector<std::string>& lines) {
  if (lines.empty()) return;
  if (fd_ >= 0) {
    std::string text;
    for (const std::string& line : lines) {
      text += '[';
      text += name_;
      text += "] ";
      text += line;
      text += '\n';
    }
    if (const int error = WriteAll(fd_, text); error != 0) {
      close(fd_);
      fd_ = -1;
      std::lock_guard lock(mutex_);
      write_error_ = fmt::format("writing '{}' failed: {}", path_, std::strerror(error));
    }
  }
  {
    std::lock_guard lock(mutex_);
    for (const std::string& line : lines) {
      kept_.push_back(line);
      if (kept_.size() > kept_lines_) kept_.pop_front();
    }
  }
  if (echo_) {
    for (const std::string& line : lines) echo_(name_, line);
  }
}

std::vector<std::string> ProcessLog::LastLines(size_t n) const {
  std::lock_guard lock(mutex_);
  const size_t count = std::min(n, kept_.size());
  return {kept_.end() - static_cast<std::ptrdiff_t>(count), kept_.end()};
}

std::string ProcessLog::WriteError() const {
  std::lock_guard lock(mutex_);
  return write_error_;
}

}  // namespace autodist::launcher
