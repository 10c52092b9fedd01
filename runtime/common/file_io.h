// Reading and writing whole files with errors that name the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace autodist {

// Returns the bytes of `path`; throws NotFound if it does not exist, InvalidArgument if it is not
// a readable regular file. `what` describes the file in messages, e.g. "model".
std::string ReadFileBytes(const std::string& path, const std::string& what);

// Reads `size` bytes at `offset` of `path` into `out`; throws NotFound or InvalidArgument naming
// `what` and the path when the file is missing, unreadable or shorter than offset + size. Ranges
// of at least kDirectReadMinBytes that are mostly not in the page cache are read with direct I/O
// (straight from the disk into `out`, whose block-aligned part needs no copy); others, and file
// systems without direct I/O, through the page cache.
inline constexpr size_t kDirectReadMinBytes = size_t{4} << 20;
void ReadFileRange(const std::string& path, int64_t offset, void* out, size_t size,
                   const std::string& what);

// Writes `bytes` to `path` (replacing it); throws InvalidArgument naming the path on failure.
void WriteFileBytes(const std::string& path, const std::string& bytes);

}  // namespace autodist
