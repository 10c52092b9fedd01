// Split's piece lengths, for the kernels of every backend: the given lengths (the `split` input
// from opset 13, the attribute before), validated, or the axis divided equally.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autodist::ops {

// The length of each of `outputs` pieces of an axis of `length`; throws InvalidArgument naming
// `what` for lengths that are not `outputs` non-negative numbers summing to `length`, or (none
// given) an axis that does not divide equally.
std::vector<int64_t> SplitSizes(const std::optional<std::vector<int64_t>>& given, int64_t outputs,
                                int64_t length, const std::string& what);

}  // namespace autodist::ops
