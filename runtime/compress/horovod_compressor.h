// HorovodCompressor (Horovod's Compression.fp16, AutoDist's HorovodCompressor) and
// HorovodCompressorEF (AutoDist's: the same with error feedback). The group is fused, cast to
// float16, all-reduced in float16 and cast back: half the bytes of float32, at float16's
// precision (11 significant bits) and range (|x| < 65520, else infinity).
//
// Error feedback keeps, per tensor, the rounding error of this rank's cast and adds it to the
// next step's gradient, so what rounding takes from one step is sent in a later one:
//   g' = g + residual;  h = half(g');  residual = g' - float(h);  send h.
// The float16 additions inside the all-reduce round too; that error belongs to no single rank
// and is not fed back (Horovod and AutoDist do the same).
//
// Overflow follows the cast: a sum or an element of magnitude >= 65520 becomes +-inf, which the
// trainer reports as a non-finite gradient. The residual of an element whose cast overflowed is
// set to 0 instead of -inf, so a step that is thrown away does not poison later ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/compress/group.h"

namespace autodist::compress {

class HorovodCompressor : public Compressor {
 public:
  // options.kind: kHorovod or kHorovodEF (error feedback).
  explicit HorovodCompressor(const CompressorOptions& options);

  void Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
              collective::Communicator& communicator, int64_t step) override;

  // The error-feedback residual of a tensor (float32, its elements); nullptr without error
  // feedback or before the tensor's first step.
  const std::vector<float>* residual(const std::string& name) const {
    return residuals_.Find(name);
  }

 private:
  // Writes half(g + residual) of each tensor into the halves to send and replaces the residual
  // by this step's rounding error (error_feedback.h).
  void ApplyErrorFeedback(const std::string& group, const std::vector<NamedGradient>& gradients);

  CompressorOptions options_;
  TensorState residuals_;
  std::vector<float> fused_;
  std::vector<uint16_t> halves_;
};

}  // namespace autodist::compress
