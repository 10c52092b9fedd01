#include "runtime/compress/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "runtime/common/error.h"

namespace autodist::compress {
namespace {

// The magnitude an element is ranked by; NaN compares false with everything, so it is mapped to
// the largest magnitude to keep the order strict.
float Magnitude(float value) {
  return std::isnan(value) ? std::numeric_limits<float>::infinity() : std::fabs(value);
}

}  // namespace

int64_t TopKCount(double fraction, int64_t elements) {
  const double exact = fraction * static_cast<double>(elements);
  const auto k = static_cast<int64_t>(std::ceil(exact * (1.0 - 1e-12)));
  return std::clamp<int64_t>(k, 0, elements);
}

void SelectLargest(const float* values, int64_t count, int64_t k, std::vector<int64_t>& indices) {
  AD_CHECK(k >= 0 && k <= count, kInternal, "top-k selection of {} out of {} elements", k, count);
  indices.resize(static_cast<size_t>(count));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  // A strict total order (magnitude, then index) makes the choice reproducible.
  const auto larger = [values](int64_t a, int64_t b) {
    const float magnitude_a = Magnitude(values[a]);
    const float magnitude_b = Magnitude(values[b]);
    return magnitude_a != magnitude_b ? magnitude_a > magnitude_b : a < b;
  };
  if (k < count) std::nth_element(indices.begin(), indices.begin() + k, indices.end(), larger);
  indices.resize(static_cast<size_t>(k));
  std::sort(indices.begin(), indices.end());
}

}  // namespace autodist::compress
