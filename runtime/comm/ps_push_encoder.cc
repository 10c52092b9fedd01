#include "runtime/comm/ps_push_encoder.h"

#include "runtime/common/error.h"
#include "runtime/tensor/float16.h"
#include "runtime/tensor/top_k.h"

namespace autodist::comm {
namespace {

using tensor::DType;
using tensor::Tensor;

const char* CompressionName(PushCompression compression) {
  switch (compression) {
    case PushCompression::kNone:
      return "NoneCompressor";
    case PushCompression::kFloat16:
      return "HorovodCompressor";
    case PushCompression::kFloat16EF:
      return "HorovodCompressorEF";
    case PushCompression::kTopKEF:
      return "TopKCompressorEF";
  }
  return "an unknown compressor";
}

}  // namespace

void CheckGradientRef(const std::string& what, const std::string& name,
                      const GradientRef& gradient) {
  AD_CHECK((gradient.dense != nullptr) != (gradient.sparse != nullptr), kInvalidArgument,
           "{}: gradient '{}' must set exactly one of dense and sparse", what, name);
  if (gradient.dense == nullptr || gradient.compression == PushCompression::kNone) return;
  AD_CHECK(gradient.dense->dtype() == DType::kFloat32, kInvalidArgument,
           "{}: gradient '{}' is {}; {} compresses float32 gradients only", what, name,
           tensor::DTypeName(gradient.dense->dtype()), CompressionName(gradient.compression));
  AD_CHECK(gradient.compression != PushCompression::kTopKEF ||
               (gradient.topk_fraction > 0.0 && gradient.topk_fraction <= 1.0),
           kInvalidArgument,
           "{}: gradient '{}': TopKCompressorEF fraction must be in (0, 1], got {}", what, name,
           gradient.topk_fraction);
}

void PushEncoder::Emit(const std::string& what, int first_replica, const std::string& name,
                       const GradientRef& gradient, int32_t replicas, int64_t piece_bytes,
                       const PieceSink& sink) {
  CheckGradientRef(what, name, gradient);
  if (gradient.sparse != nullptr) {
    EmitSparse(name, *gradient.sparse, replicas, piece_bytes, sink);
    return;
  }
  const Tensor& dense = *gradient.dense;
  if (gradient.compression == PushCompression::kNone) {
    EmitTensor(name, dense, replicas, piece_bytes, sink);
    return;
  }
  const int64_t elements = dense.numel();
  const auto count = static_cast<size_t>(elements);
  const float* values = dense.data<float>();
  switch (gradient.compression) {
    case PushCompression::kNone:
      break;  // sent above
    case PushCompression::kFloat16: {
      std::vector<uint16_t> halves(count);
      tensor::FloatsToHalves(values, count, halves.data());
      EmitHalves(name, dense.shape(), halves, replicas, piece_bytes, sink);
      return;
    }
    case PushCompression::kFloat16EF: {
      std::vector<uint16_t> halves(count);
      {
        State& state = StateFor(what, first_replica, name, elements);
        const std::lock_guard lock(state.mutex);
        tensor::FloatsToHalvesWithFeedback(values, count, state.residual.data(), halves.data());
      }
      EmitHalves(name, dense.shape(), halves, replicas, piece_bytes, sink);
      return;
    }
    case PushCompression::kTopKEF: {
      std::vector<int64_t> indices;
      std::vector<float> picked;
      {
        State& state = StateFor(what, first_replica, name, elements);
        const std::lock_guard lock(state.mutex);
        // g' = g + e in place of e; what is sent is then cut out of it, and the rest stays as
        // the next residual.
        float* corrected = state.residual.data();
        for (size_t i = 0; i < count; ++i) corrected[i] += values[i];
        tensor::SelectLargest(corrected, elements,
                              tensor::TopKCount(gradient.topk_fraction, elements), state.picked);
        indices = state.picked;
        picked.reserve(indices.size());
        for (const int64_t index : indices) {
          picked.push_back(corrected[index]);
          corrected[index] = 0.0F;
        }
      }
      EmitTopK(name, dense.shape(), indices, picked, replicas, piece_bytes, sink);
      return;
    }
  }
  Fail(ErrorCode::kInternal, "{}: gradient '{}' has an unknown compression {}", what, name,
       static_cast<int>(gradient.compression));
}

PushEncoder::State& PushEncoder::StateFor(const std::string& what, int first_replica,
                                          const std::string& name, int64_t elements) {
  const std::lock_guard lock(mutex_);
  std::unique_ptr<State>& state = states_[{first_replica, name}];
  if (state == nullptr) {
    state = std::make_unique<State>();
    state->residual.assign(static_cast<size_t>(elements), 0.0F);
  }
  // Read under the map's lock: a state's size never changes once made.
  AD_CHECK(static_cast<int64_t>(state->residual.size()) == elements, kFailedPrecondition,
           "{}: gradient '{}' of replica {} has {} elements; its error-feedback residual has {}",
           what, name, first_replica, elements, state->residual.size());
  return *state;
}

std::optional<std::vector<float>> PushEncoder::Residual(int first_replica,
                                                        const std::string& name) const {
  State* state = nullptr;
  {
    const std::lock_guard lock(mutex_);
    const auto it = states_.find({first_replica, name});
    if (it == states_.end()) return std::nullopt;
    state = it->second.get();
  }
  const std::lock_guard lock(state->mutex);
  return state->residual;
}

}  // namespace autodist::comm
