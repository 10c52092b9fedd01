#include "runtime/compress/error_feedback.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/compress/top_k.h"
#include "runtime/tensor/float16.h"

namespace autodist::compress {

void FloatsToHalvesWithFeedback(const float* gradient, size_t count, float* residual,
                                uint16_t* out) {
  for (size_t i = 0; i < count; ++i) residual[i] += gradient[i];
  // Converted in bulk (vectorized); what was sent comes back through a small block buffer, so
  // the only full-size buffers are the caller's.
  tensor::FloatsToHalves(residual, count, out);
  constexpr size_t kBlock = 1024;
  std::array<float, kBlock> sent{};
  for (size_t start = 0; start < count; start += kBlock) {
    const size_t length = std::min(kBlock, count - start);
    tensor::HalvesToFloats(out + start, length, sent.data());
    float* error = residual + start;
    for (size_t i = 0; i < length; ++i) {
      error[i] = std::isinf(sent[i]) && std::isfinite(error[i]) ? 0.0F : error[i] - sent[i];
    }
  }
}

void TakeLargestWithFeedback(const float* gradient, size_t count, float* residual, int64_t k,
                             std::vector<int64_t>& indices, std::vector<float>& picked) {
  // g' is built in the residual's storage: what is sent is cut out of it, and the rest stays.
  for (size_t i = 0; i < count; ++i) residual[i] += gradient[i];
  SelectLargest(residual, static_cast<int64_t>(count), k, indices);
  picked.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    const auto index = static_cast<size_t>(indices[i]);
    picked[i] = residual[index];
    residual[index] = 0.0F;
  }
}

}  // namespace autodist::compress
