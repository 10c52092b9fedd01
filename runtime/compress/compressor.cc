#include "runtime/compress/compressor.h"

#include "runtime/compress/registry.h"

namespace autodist::compress {

std::unique_ptr<Compressor> MakeCompressor(const CompressorOptions& options) {
  return FindCompressor(options.kind).make(options);
}

const char* CompressorName(CompressorKind kind) { return FindCompressor(kind).name; }

}  // namespace autodist::compress
