// What the ONNX loss ops share: the `reduction` attribute (none | sum | mean, default mean) and
// the weighted negative log-likelihood they both reduce.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/ops/node_info.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ops {

enum class Reduction { kNone, kSum, kMean };

// Reads `reduction`; throws InvalidArgument naming the node for any other value.
Reduction ParseReduction(const NodeInfo& node);

// `ignore_index` when the node gives it; absent means no label is ignored (as ONNX says; PyTorch
// would default to -100).
std::optional<int64_t> ParseIgnoreIndex(const NodeInfo& node);

// Throws InvalidArgument naming `describe` at the first label outside [0, c) that is not
// `ignore_index`, calling it `noun` (the CUDA kernels check their labels with this too).
void CheckLabels(const std::vector<int64_t>& labels, int64_t c, std::optional<int64_t> ignore_index,
                 const std::string& describe, const char* noun);

struct ReducedLoss {
  tensor::Tensor value;      // per-element losses (kNone) or the reduced scalar
  float denominator = 1.0F;  // what the sum was divided by (the weights' sum for kMean)
};

// Losses -w[t] * log_prob[n, t, d] of `log_prob` [N, C, D] (flattened) at `labels` [N * D],
// zero where the label equals `ignore_index`, reduced as PyTorch's nll_loss does. A label
// outside [0, C) throws InvalidArgument naming `describe` and calling it `noun`.
ReducedLoss WeightedNll(const float* log_prob, int64_t n, int64_t c, int64_t d,
                        const tensor::Shape& label_shape, const std::vector<int64_t>& labels,
                        const float* weights, Reduction reduction,
                        std::optional<int64_t> ignore_index, const std::string& describe,
                        const char* noun);

}  // namespace autodist::ops
