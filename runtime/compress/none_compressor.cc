#include "runtime/compress/none_compressor.h"

#include "runtime/compress/group.h"

namespace autodist::compress {

NoneCompressor::NoneCompressor(const CompressorOptions& options) : options_(options) {}

void NoneCompressor::Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
                            comm::Communicator& communicator, int64_t /*step*/) {
  ValidateGroup(CompressorName(CompressorKind::kNone), group, gradients);
  const int64_t sent = FusedAllReduce(gradients, communicator, options_.algorithm, group, buffer_);
  stats_.raw_bytes += sent;
  stats_.wire_bytes += sent;
}

}  // namespace autodist::compress
