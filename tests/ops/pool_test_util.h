// What the 2-D window pooling tests (AveragePool, MaxPool) share: the window geometries their
// gradients are checked on. Both kernels walk windows with the same code (runtime/ops/nn/pool.h),
// so both are checked on the same basic geometries, plus those of their own attributes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/ops/op_test_util.h"

namespace autodist::ops::testing {

// One gradient check: a test name, X's shape [N, C, H, W] and the node's attributes.
struct PoolConfig {
  std::string name;
  Shape x;
  std::vector<onnx::AttributeProto> attributes;
};

// The geometries every pooling op is checked on (non-overlapping strided windows; overlapping
// windows over padding), followed by the op's own `specific` ones.
inline std::vector<PoolConfig> PoolGeometries(std::vector<PoolConfig> specific) {
  std::vector<PoolConfig> configs{
      {"Stride2", {2, 2, 4, 4}, {AttrInts("kernel_shape", {2, 2}), AttrInts("strides", {2, 2})}},
      {"OverlappingPadded",
       {1, 2, 5, 5},
       {AttrInts("kernel_shape", {3, 3}), AttrInts("pads", {1, 1, 1, 1})}}};
  for (PoolConfig& config : specific) configs.push_back(std::move(config));
  return configs;
}

// The test name of a PoolConfig parameter (INSTANTIATE_TEST_SUITE_P's name generator).
inline std::string PoolConfigName(const ::testing::TestParamInfo<PoolConfig>& info) {
  return info.param.name;
}

}  // namespace autodist::ops::testing
