// Reading and writing whole files with errors that name the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace autodist {

// Returns the bytes of `path`; throws NotFound if it does not exist, InvalidArgument if it is not
// a readable regular file. `what` describes the file in messages, e.g. "model".
std::string ReadFileBytes(const std::string& path, const std::string& what);

// Reads `size` bytes at `offset` of `path` into `out` (pread, no intermediate buffer); throws
// NotFound or InvalidArgument naming `what` and the path when the file is missing, unreadable or
// shorter than offset + size.
void ReadFileRange(const std::string& path, int64_t offset, void* out, size_t size,
                   const std::string& what);

// Writes `bytes` to `path` (replacing it); throws InvalidArgument naming the path on failure.
void WriteFileBytes(const std::string& path, const std::string& bytes);

}  // namespace autodist
