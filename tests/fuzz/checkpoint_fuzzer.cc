// The checkpoint loader: a file's trailer, header and tensor table, then every tensor read and
// checked (the old single-message format too).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader reads files (ranges of them, with pread): the input becomes one.
  static const std::string path =
      "/tmp/autodist-fuzz-checkpoint-" + std::to_string(::getpid()) + ".ckpt";
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    const autodist::checkpoint::CheckpointReader reader(path);
    for (const auto* entries : {&reader.variables(), &reader.states(), &reader.optimizer()}) {
      for (const auto& entry : *entries) {
        try {
          (void)reader.Read(entry);
        } catch (const autodist::Error&) {
          // A damaged tensor is reported; the others are still read.
        }
      }
    }
  } catch (const autodist::Error&) {
  }
  ::unlink(path.c_str());
  return 0;
}
