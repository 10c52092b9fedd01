// What one Dropout call does, decided alike by the CPU and CUDA kernels (runtime/ops/nn/
// dropout.cc describes the op): whether it drops (the session trains, the training_mode input
// when given is true, and the ratio is not 0), the scale of what it keeps, and the seed of its
// mask (dropout_mask.h), one draw from the session's random engine per call that drops.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/ops/kernel.h"

namespace autodist::ops {

struct DropoutDraw {
  bool drops = false;
  float scale = 1.0F;  // 1 / (1 - ratio); 0 when the ratio is 1
  uint64_t seed = 0;
  uint64_t threshold = 0;  // keep iff the 24-bit draw is below it: (1 - ratio) * 2^24
};

// Throws InvalidArgument naming the node unless `ratio` is in [0, 1].
void CheckDropoutRatio(float ratio, const std::string& node);

// Reads the ratio (the attribute before opset 12, else input 1, 0.5 without it) and the mode
// (input 2, a scalar, read through a host copy on a device), and draws the seed when it drops.
DropoutDraw DrawDropout(ForwardContext& ctx, bool ratio_from_attribute, float attribute_ratio);

}  // namespace autodist::ops
