// The NPY array reader.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/common/error.h"
#include "runtime/data/npy_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)autodist::data::ParseNpy(std::string_view(reinterpret_cast<const char*>(data), size),
                                   "fuzz.npy");
  } catch (const autodist::Error&) {
  }
  return 0;
}
