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

std::optional<int64_t> ParseIgnoreIndex(const NodeInfo& node) {
  if (!node.HasAttribute("ignore_index")) return std::nullopt;
  return node.GetInt("ignore_index", 0);
}

void CheckLabels(const std::vector<int64_t>& labels, int64_t c, std::optional<int64_t> ignore_index,
                 const std::string& describe, const char* noun) {
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t t = labels[i];
    if (ignore_index && t == *ignore_index) continue;
    AD_CHECK(t >= 0 && t < c, kInvalidArgument, "{}: {} {} at position {} is outside [0, {})",
             describe, noun, t, i, c);
  }
}

ReducedLoss WeightedNll(const float* log_prob, int64_t n, int64_t c, int64_t d,
                        const tensor::Shape& label_shape, const std::vector<int64_t>& labels,
                        const float* weights, Reduction reduction,
                        std::optional<int64_t> ignore_index, const std::string& describe,
                        const char* noun) {
  CheckLabels(labels, c, ignore_index, describe, noun);
  tensor::Tensor losses(tensor::DType::kFloat32, label_shape);
  float* loss = losses.data<float>();
  double weight_sum = 0.0;
  for (int64_t i = 0; i < n * d; ++i) {
    const int64_t t = labels[static_cast<size_t>(i)];
    if (ignore_index && t == *ignore_index) {
      loss[i] = 0.0F;
      continue;
    }
    const float w = weights != nullptr ? weights[t] : 1.0F;
    loss[i] = -w * log_prob[(i / d) * c * d + t * d + i % d];
    weight_sum += w;
  }
  ReducedLoss result;
  if (reduction == Reduction::kNone) {
    result.value = std::move(losses);
    return result;
  }
  double total = 0.0;
  for (int64_t i = 0; i < losses.numel(); ++i) total += loss[i];
  result.denominator = reduction == Reduction::kMean ? static_cast<float>(weight_sum) : 1.0F;
  result.value = tensor::Tensor::Scalar(static_cast<float>(total / result.denominator));
  return result;
}

}  // namespace autodist::ops
