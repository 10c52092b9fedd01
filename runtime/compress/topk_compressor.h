// TopKCompressorEF: sparsification with error feedback (Stich et al. 2018, "Sparsified SGD with
// memory"; Deep Gradient Compression without its momentum correction). Per group, with the
// group's n elements fused and a residual e per tensor (0 at first):
//
//   g' = g + e                          error feedback
//   S  = the k = ceil(fraction n) entries of g' largest in magnitude (ties: lower index first)
//   e  = g' with S zeroed               what was not sent waits for a later step
//   send S as k (int64 index, float32 value) pairs: two all-gathers of k elements per rank
//   result = sum over ranks of their S, scattered into zeros, in rank order on every rank
//
// Every rank picks the same k (same n and fraction), so plain AllGather suffices. An element
// that is never large enough keeps growing in e until it is picked, so everything is sent
// eventually. 12 bytes per picked element: it only shrinks the payload for fraction < 1/3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/compress/group.h"

namespace autodist::compress {

// Throws InvalidArgument unless 0 < options.fraction <= 1: the host compressor's check, and the
// devices' flat forms' (gpu/compress/).
void CheckTopKOptions(const CompressorOptions& options);

class TopKCompressorEF : public Compressor {
 public:
  // Throws InvalidArgument unless 0 < options.fraction <= 1.
  explicit TopKCompressorEF(const CompressorOptions& options);

  void Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
              collective::Communicator& communicator, int64_t step) override;

  // Elements sent per rank for a group of `elements` elements.
  int64_t PickCount(int64_t elements) const;

  // A tensor's residual; nullptr before its first step.
  const std::vector<float>* residual(const std::string& name) const {
    return residuals_.Find(name);
  }

 private:
  // The group's residuals, one per tensor, back to back into fused_residual_ (laid out as Fuse
  // lays out the gradients), so that error feedback runs over the group at once
  // (error_feedback.h), and back.
  void GatherResiduals(const std::string& group, const std::vector<NamedGradient>& gradients);
  void ScatterResiduals(const std::string& group, const std::vector<NamedGradient>& gradients);

  CompressorOptions options_;
  TensorState residuals_;
  std::vector<float> fused_;
  std::vector<float> fused_residual_;
  std::vector<int64_t> indices_;
  std::vector<float> values_;
  std::vector<int64_t> all_indices_;
  std::vector<float> all_values_;
};

}  // namespace autodist::compress
