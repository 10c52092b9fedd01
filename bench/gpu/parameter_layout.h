// The parameter layout of the GPU optimizer benchmarks, shared with torch_fused_optimizer.py (which
// writes the same rule in Python): tensors the sizes of a Transformer's, repeated until `total`
// parameters (4 Mi weight matrices, 1 Mi projections, 4 Ki and 1 Ki biases and norms), the last
// one cut to fit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace autodist::bench {

inline std::vector<int64_t> ParameterLayout(int64_t total) {
  constexpr int64_t kPattern[] = {4194304, 1048576, 4096, 1024};
  std::vector<int64_t> sizes;
  int64_t placed = 0;
  for (size_t i = 0; placed < total; ++i) {
    const int64_t size = std::min(kPattern[i % 4], total - placed);
    sizes.push_back(size);
    placed += size;
  }
  return sizes;
}

}  // namespace autodist::bench
