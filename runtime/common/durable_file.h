// A file that is written whole or not at all, and survives a crash once written: the bytes go to
// "<path>.tmp"; Commit() flushes it to the disk (fsync), renames it over `path` and flushes the
// directory, so after Commit returns the file is there with all its bytes even if the node loses
// power. Without Commit (an error, an exception) the temporary is removed and an existing file at
// `path` is untouched. Checkpoints and exported models are written this way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/common/direct_io.h"

namespace autodist {

class DurableFile {
 public:
  // Opens "<path>.tmp". With `expected_bytes` > 0, a disk without that much free space is
  // reported before anything is written. `what` describes the file in messages
  // ("checkpoint"). Throws InvalidArgument naming the path (and the bytes needed when the disk
  // is full).
  DurableFile(std::string path, uint64_t expected_bytes, std::string what);
  ~DurableFile();
  DurableFile(const DurableFile&) = delete;
  DurableFile& operator=(const DurableFile&) = delete;

  // Appends `size` bytes.
  void Write(const void* data, size_t size);
  // Appends zero bytes up to the next multiple of `alignment`.
  void PadTo(uint64_t alignment);
  // Bytes written so far.
  uint64_t position() const { return position_; }

  // Makes the file durable at `path` (see above). Writing after Commit is an error.
  void Commit();

  const std::string& path() const { return path_; }

  // Writes of at least this many bytes go to the disk directly (O_DIRECT), not through the page
  // cache: for a 2.4 GB checkpoint the page cache's copy cost as much as the disk (performance.md,
  // "Large models").
  static constexpr size_t kDirectMinBytes = size_t{1} << 20;

 private:
  [[noreturn]] void FailWrite(int error, uint64_t needed);
  void WriteCached(const char* data, size_t size);
  void WriteDirect(const char* data, size_t size);
  void CloseDirect();

  std::string path_;
  std::string temporary_;
  std::string what_;
  uint64_t expected_ = 0;
  uint64_t position_ = 0;
  int fd_ = -1;
  int direct_fd_ = -1;     // the same file opened for direct I/O; -1 where that is not possible
  DirectIoBuffer bounce_;  // aligned, for sources that are not
};

// Flushes directory `dir` (after a rename or unlink in it) so the change survives a crash.
void SyncDirectory(const std::string& dir);

}  // namespace autodist
