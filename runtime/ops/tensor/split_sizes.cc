#include "runtime/ops/tensor/split_sizes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "runtime/common/error.h"

namespace autodist::ops {

std::vector<int64_t> SplitSizes(const std::optional<std::vector<int64_t>>& given, int64_t outputs,
                                int64_t length, const std::string& what) {
  AD_CHECK(outputs > 0, kInvalidArgument, "{}: needs at least one output", what);
  if (!given.has_value()) {
    AD_CHECK(length % outputs == 0, kInvalidArgument,
             "{}: an axis of length {} cannot be split equally into {} outputs", what, length,
             outputs);
    // NOLINTNEXTLINE(modernize-return-braced-init-list): braces would make a 2-element list
    return std::vector<int64_t>(static_cast<size_t>(outputs), length / outputs);
  }
  const std::vector<int64_t>& sizes = *given;
  bool valid = static_cast<int64_t>(sizes.size()) == outputs &&
               std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == length;
  for (const int64_t size : sizes) valid = valid && size >= 0;
  AD_CHECK(valid, kInvalidArgument,
           "{}: split [{}] must be {} non-negative lengths summing to the axis length {}", what,
           fmt::join(sizes, ", "), outputs, length);
  return sizes;
}

}  // namespace autodist::ops
