// Error feedback, written once for every lossy compressor and for both places compression
// happens: the all-reduce compressors (one fusion group) and compressed parameter-server pushes
// (one tensor of one replica stream). A residual holds what compression left out so far; each
// step adds it to the new gradient and keeps what is left out again, so over steps nothing is
// lost (Seide et al. 2014; Stich et al. 2018). The caller owns the residual, sized to the
// gradient and zero at first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace autodist::compress {

// A float16 cast with error feedback, element-wise over `count` elements:
//   g' = gradient + residual;  out = half(g');  residual = g' - float(out)
// Where the cast overflowed (a finite g' became +-inf) the residual is set to 0 rather than -inf:
// the infinity is reported by whoever receives it, and a step thrown away for it must not poison
// later ones. The gradient is only read, so callers need no copy of it.
void FloatsToHalvesWithFeedback(const float* gradient, size_t count, float* residual,
                                uint16_t* out);

// Top-k sparsification with error feedback over `count` elements:
//   g' = residual + gradient;  S = the k entries of g' largest in magnitude (SelectLargest);
//   indices, picked = S's positions (ascending) and values;  residual = g' with S zeroed.
// `indices` doubles as SelectLargest's scratch space, so callers that keep it allocate once.
void TakeLargestWithFeedback(const float* gradient, size_t count, float* residual, int64_t k,
                             std::vector<int64_t>& indices, std::vector<float>& picked);

}  // namespace autodist::compress
