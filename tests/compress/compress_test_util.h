// Helpers shared by the compressor tests: gradients per rank, groups, and the sum over ranks.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress::testing {

inline tensor::Tensor MakeTensor(tensor::Shape shape, const std::vector<float>& values) {
  return tensor::Tensor::FromVector(std::move(shape), values);
}

inline std::vector<float> Values(const tensor::Tensor& tensor) {
  const float* data = tensor.data<float>();
  return {data, data + tensor.numel()};
}

// `count` values uniform in [low, high) from a generator seeded with `seed`.
inline std::vector<float> RandomValues(size_t count, uint64_t seed, float low = -1.0F,
                                       float high = 1.0F) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> uniform(low, high);
  std::vector<float> values(count);
  for (float& value : values) value = uniform(engine);
  return values;
}

// `count` small integers in [-8, 8] as floats: their sums over a few ranks are exact in float32
// whatever the summation order.
inline std::vector<float> IntegerValues(size_t count, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<int> uniform(-8, 8);
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(uniform(engine));
  return values;
}

// A group over named tensors (pointers stay valid while `tensors` is not resized).
inline std::vector<NamedGradient> Group(const std::vector<std::string>& names,
                                        std::vector<tensor::Tensor>& tensors) {
  std::vector<NamedGradient> group;
  for (size_t i = 0; i < names.size(); ++i) group.push_back({names[i], &tensors[i]});
  return group;
}

}  // namespace autodist::compress::testing
