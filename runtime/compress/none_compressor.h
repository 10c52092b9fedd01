// NoneCompressor (AutoDist's NoneCompressor, Horovod's Compression.none): float32 on the wire, one
// fused all-reduce per group. Exact up to the summation order of the all-reduce algorithm.
#pragma once

#include <string>
#include <vector>

#include "runtime/compress/compressor.h"

namespace autodist::compress {

class NoneCompressor : public Compressor {
 public:
  explicit NoneCompressor(const CompressorOptions& options);

  void Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
              collective::Communicator& communicator, int64_t step) override;

 private:
  CompressorOptions options_;
  std::vector<float> buffer_;  // the fusion buffer, kept to spare an allocation per step
};

}  // namespace autodist::compress
