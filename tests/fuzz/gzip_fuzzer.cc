// gzip decompression of whole files (concatenated members, trailing bytes), as IDX files ship.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/common/error.h"
#include "runtime/data/gzip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    if (autodist::data::IsGzip(bytes)) (void)autodist::data::Gunzip(bytes, "fuzz.gz");
  } catch (const autodist::Error&) {
  }
  return 0;
}
