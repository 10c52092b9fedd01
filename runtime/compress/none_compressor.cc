#include "runtime/compress/none_compressor.h"

#include "runtime/compress/group.h"
#include "runtime/compress/registry.h"

namespace autodist::compress {
namespace {

// Pushes travel as float32, straight from the gradient: nothing to encode.
const CompressorRegistrar kRegistrar(
    {.kind = CompressorKind::kNone,
     .name = "NoneCompressor",
     .make = [](const CompressorOptions& options) -> std::unique_ptr<Compressor> {
       return std::make_unique<NoneCompressor>(options);
     },
     .encode_push = nullptr,
     .pushes = true,
     .error_feedback = false});

}  // namespace

NoneCompressor::NoneCompressor(const CompressorOptions& options) : options_(options) {}

void NoneCompressor::Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
                            collective::Communicator& communicator, int64_t /*step*/) {
  ValidateGroup("NoneCompressor", group, gradients);
  const int64_t sent = FusedAllReduce(gradients, communicator, options_.algorithm, group, buffer_);
  stats_.raw_bytes += sent;
  stats_.wire_bytes += sent;
}

}  // namespace autodist::compress
