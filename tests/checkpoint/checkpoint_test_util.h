// What the checkpoint tests share: damaging a file on purpose.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace autodist::checkpoint::testing {

// Flips one bit of the byte at `offset` of `path`.
inline void FlipByte(const std::string& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x10);
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

}  // namespace autodist::checkpoint::testing
