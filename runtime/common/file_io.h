// Reading and writing whole files with errors that name the path.
#pragma once

#include <string>

namespace autodist {

// Returns the bytes of `path`; throws NotFound if it does not exist, InvalidArgument if it is not
// a readable regular file. `what` describes the file in messages, e.g. "model".
std::string ReadFileBytes(const std::string& path, const std::string& what);

// Writes `bytes` to `path` (replacing it); throws InvalidArgument naming the path on failure.
void WriteFileBytes(const std::string& path, const std::string& bytes);

}  // namespace autodist
