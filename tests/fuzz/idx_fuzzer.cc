// The IDX array reader (Fashion-MNIST's format).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/common/error.h"
#include "runtime/data/idx_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)autodist::data::ParseIdx(std::string_view(reinterpret_cast<const char*>(data), size),
                                   "fuzz.idx");
  } catch (const autodist::Error&) {
  }
  return 0;
}
