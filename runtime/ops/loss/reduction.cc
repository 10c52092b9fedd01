#include "runtime/ops/loss/reduction.h"

#include "runtime/common/error.h"

namespace autodist::ops {

Reduction ParseReduction(const NodeInfo& node) {
  const std::string reduction = node.GetString("reduction", "mean");
  if (reduction == "none") return Reduction::kNone;
  if (reduction == "sum") return Reduction::kSum;
  if (reduction == "mean") return Reduction::kMean;
  Fail(ErrorCode::kInvalidArgument, "{}: reduction must be none, sum or mean, got '{}'",
       node.Describe(), reduction);
}

}  // namespace autodist::ops
