// PowerSGDCompressor: rank-r PowerSGD with error feedback and warm start (Vogels, Karimireddy and
// Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for Distributed Optimization",
// NeurIPS 2019), the algorithm of PyTorch's powerSGD_hook, under our contract that Reduce returns
// the SUM over the W ranks (PyTorch's hook returns the mean). For each compressed tensor of rank
// w, viewed as an n x m matrix (first dimension x the rest), with residual e_w (0 at first):
//
//   M_w  = G_w + e_w                         error feedback
//   P    = sum_w M_w Q                       all-reduce #1 (n x r per tensor, fused over the group)
//   P^   = orthonormalize(P)                 identical on every rank (P is the all-reduced sum)
//   Qs   = sum_w M_w^T P^                    all-reduce #2 (m x r per tensor, fused)
//   G'   = P^ Qs^T  (= P^ P^T sum_w M_w)     returned: the sum, projected on r directions
//   e_w  = M_w - G' / W                      this rank's error w.r.t. the mean approximation
//   Q    = Qs                                warm start: next step's Q (scale is irrelevant:
//                                            P is orthonormalized)
//
// Q starts as a standard normal m x r matrix drawn from (seed, tensor name, step), the same on
// every rank; without warm start it is drawn afresh every step, and with it a Q that has a zero
// or non-finite column (a zero gradient, a diverged step) is drawn afresh too. Only sum_w e_w
// enters the next step (every quantity above is linear in sum_w M_w), and sum_w e_w =
// sum_w M_w - G' is exactly the compression error of the sum; each rank's e_w additionally holds
// its own deviation from the mean, which cancels in the sum (as in the paper and PyTorch).
//
// Reduced uncompressed (fused, float32, exact, no residual): every tensor before
// options.start_step, and from then on tensors that are scalars or 1-D, that would not shrink
// (r (n + m) >= n m), or that have fewer than options.min_compression_elements elements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/compress/group.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress {

// A P column keeping less than this fraction of its norm after orthogonalization is rounding
// noise of float32 products (relative error ~1e-7 per element), not a direction.
inline constexpr double kPowerSGDOrthogonalizationEpsilon = 1e-5;

// Throws InvalidArgument for a rank below 1 or a negative start step or element threshold.
void CheckPowerSGDOptions(const CompressorOptions& options);

// Whether PowerSGD with `options` compresses a gradient of this shape (from start_step on): the
// split of a group that the host compressor and the devices' flat forms (gpu/compress/) share.
bool PowerSGDCompresses(const CompressorOptions& options, const tensor::Shape& shape);

class PowerSGDCompressor : public Compressor {
 public:
  // Throws InvalidArgument for a rank below 1 or a negative start step or element threshold.
  explicit PowerSGDCompressor(const CompressorOptions& options);

  void Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
              collective::Communicator& communicator, int64_t step) override;

  // Whether a gradient of this shape is compressed (from start_step on).
  bool Compresses(const tensor::Shape& shape) const { return PowerSGDCompresses(options_, shape); }

  // A compressed tensor's residual e_w (n x m, row-major) and its Q (m x r, row-major, the last
  // Qs); nullptr before its first compressed step.
  const std::vector<float>* residual(const std::string& name) const {
    return residuals_.Find(name);
  }
  const std::vector<float>* q(const std::string& name) const { return qs_.Find(name); }

 private:
  struct LowRank {
    const NamedGradient* named;
    int64_t n;
    int64_t m;
    size_t p_offset;  // into p_ (n r elements)
    size_t q_offset;  // into q_ (m r elements)
  };

  // M = G + e in place, Q drawn or reused, P = M Q into p_.
  void ProjectOnQ(const std::string& group, const LowRank& matrix, int64_t step);
  // G' = P^ Qs^T into the gradient, e = M - G' / W, Q = Qs.
  void Decompress(const std::string& group, const LowRank& matrix, int world);

  CompressorOptions options_;
  TensorState residuals_;
  TensorState qs_;
  std::vector<float> dense_buffer_;
  std::vector<float> p_;
  std::vector<float> q_;
};

}  // namespace autodist::compress
