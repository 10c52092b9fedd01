// What the BatchNormalization kernels of every backend read of their node and check of their
// inputs, with the errors a user sees (runtime/ops/nn/batch_normalization.cc has the semantics).
#pragma once

#include <string>

#include "runtime/ops/kernel.h"
#include "runtime/ops/node_info.h"

namespace autodist::ops::nn {

struct BatchNormAttributes {
  float epsilon = 1e-5F;
  float momentum = 0.9F;
  // Exported for training: training_mode = 1 from opset 14, more than one output before.
  bool training_form = false;
};

// Throws InvalidArgument naming the node for more outputs than its opset's signature has.
BatchNormAttributes ParseBatchNorm(const NodeInfo& node);

// Checks X (float32 [N, C, ...]) and scale, B, input_mean, input_var (float32 [C]).
void CheckBatchNormInputs(const ForwardContext& ctx, const std::string& what);

}  // namespace autodist::ops::nn
