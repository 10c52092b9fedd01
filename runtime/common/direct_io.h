// What direct I/O (O_DIRECT) needs, shared by the writes (DurableFile) and the reads
// (ReadFileRange) that bypass the page cache: block-aligned offsets, lengths and memory, large
// files moved in pieces, and an aligned buffer that stands in for memory that is not aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

namespace autodist {

// The alignment direct I/O asks of file offsets, lengths and memory (the largest logical block
// size in use).
inline constexpr size_t kDirectIoBlockBytes = 4096;

// Large files are read and written in pieces of this size, as `dd bs=16M` moves them: one call
// for a whole large tensor was slower here (cold cache, 2.4 GB), and Linux moves at most
// 0x7ffff000 bytes per call anyway.
inline constexpr size_t kIoPieceBytes = size_t{16} << 20;

inline bool IsBlockAligned(const void* memory) {
  return reinterpret_cast<uintptr_t>(memory) % kDirectIoBlockBytes == 0;
}

// kIoPieceBytes of block-aligned memory, allocated on first use.
class DirectIoBuffer {
 public:
  // The buffer; null when it cannot be allocated.
  char* Get() {
    if (memory_ == nullptr) {
      memory_.reset(static_cast<char*>(std::aligned_alloc(kDirectIoBlockBytes, kIoPieceBytes)));
    }
    return memory_.get();
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> memory_;
};

}  // namespace autodist
