#include "runtime/compress/powersgd_compressor.h"

#include <algorithm>

#include "runtime/common/error.h"
#include "runtime/compress/powersgd_math.h"
#include "runtime/compress/registry.h"
#include "runtime/ops/math/blas.h"

namespace autodist::compress {
namespace {

constexpr const char* kName = "PowerSGDCompressor";

// No push form: the low-rank factors are found with an all-reduce.
const CompressorRegistrar kRegistrar(
    {.kind = CompressorKind::kPowerSGD,
     .name = kName,
     .make = [](const CompressorOptions& options) -> std::unique_ptr<Compressor> {
       return std::make_unique<PowerSGDCompressor>(options);
     },
     .encode_push = nullptr,
     .pushes = false,
     .error_feedback = false});

}  // namespace

void CheckPowerSGDOptions(const CompressorOptions& options) {
  AD_CHECK(options.rank >= 1, kInvalidArgument, "{}: rank must be at least 1, got {}", kName,
           options.rank);
  AD_CHECK(options.start_step >= 0, kInvalidArgument, "{}: start_step must be non-negative, got {}",
           kName, options.start_step);
  AD_CHECK(options.min_compression_elements >= 0, kInvalidArgument,
           "{}: min_compression_elements must be non-negative, got {}", kName,
           options.min_compression_elements);
}

bool PowerSGDCompresses(const CompressorOptions& options, const tensor::Shape& shape) {
  if (shape.size() < 2) return false;
  const int64_t elements = tensor::NumElements(shape);
  if (elements == 0 || elements < options.min_compression_elements) return false;
  const int64_t n = shape[0];
  const int64_t m = elements / n;
  return options.rank * (n + m) < n * m;
}

PowerSGDCompressor::PowerSGDCompressor(const CompressorOptions& options)
    : options_(options), residuals_(kName, "residual"), qs_(kName, "Q") {
  CheckPowerSGDOptions(options);
}

void PowerSGDCompressor::Reduce(const std::string& group,
                                const std::vector<NamedGradient>& gradients,
                                collective::Communicator& communicator, int64_t step) {
  ValidateGroup(kName, group, gradients);
  const int64_t raw = TotalElements(gradients) * static_cast<int64_t>(sizeof(float));
  stats_.raw_bytes += raw;
  if (step < options_.start_step) {
    stats_.wire_bytes +=
        FusedAllReduce(gradients, communicator, options_.algorithm, group, dense_buffer_);
    return;
  }

  // Split the group; the split depends on shapes and options only, so every rank runs the same
  // collectives.
  const int64_t r = options_.rank;
  std::vector<NamedGradient> dense;
  std::vector<LowRank> low_rank;
  size_t p_size = 0;
  size_t q_size = 0;
  for (const NamedGradient& named : gradients) {
    if (!Compresses(named.gradient->shape())) {
      dense.push_back(named);
      continue;
    }
    const int64_t n = named.gradient->dim(0);
    const int64_t m = named.gradient->numel() / n;
    low_rank.push_back({&named, n, m, p_size, q_size});
    p_size += static_cast<size_t>(n * r);
    q_size += static_cast<size_t>(m * r);
  }
  stats_.wire_bytes += FusedAllReduce(dense, communicator, options_.algorithm,
                                      group + "/uncompressed", dense_buffer_);
  if (low_rank.empty()) return;

  p_.resize(p_size);
  q_.resize(q_size);
  for (const LowRank& matrix : low_rank) ProjectOnQ(group, matrix, step);
  communicator.AllReduceSum(p_.data(), p_.size(), collective::ElementType::kFloat32,
                            options_.algorithm, group + "/P");
  for (const LowRank& matrix : low_rank) {
    float* p = p_.data() + matrix.p_offset;
    OrthonormalizeColumns(p, matrix.n, r, kPowerSGDOrthogonalizationEpsilon);
    // Qs_w = M_w^T P^.
    ops::Sgemm(true, false, matrix.m, r, matrix.n, 1.0F, matrix.named->gradient->data<float>(), p,
               0.0F, q_.data() + matrix.q_offset);
  }
  communicator.AllReduceSum(q_.data(), q_.size(), collective::ElementType::kFloat32,
                            options_.algorithm, group + "/Q");
  for (const LowRank& matrix : low_rank) Decompress(group, matrix, communicator.size());
  stats_.wire_bytes += static_cast<int64_t>((p_.size() + q_.size()) * sizeof(float));
}

void PowerSGDCompressor::ProjectOnQ(const std::string& group, const LowRank& matrix, int64_t step) {
  const NamedGradient& named = *matrix.named;
  const int64_t r = options_.rank;
  auto* m_data = named.gradient->data<float>();
  const auto elements = static_cast<size_t>(named.gradient->numel());
  const std::vector<float>& residual = residuals_.Get(group, named.name, elements);
  for (size_t i = 0; i < elements; ++i) m_data[i] += residual[i];

  const bool fresh = !qs_.Contains(named.name);
  std::vector<float>& q = qs_.Get(group, named.name, static_cast<size_t>(matrix.m * r));
  if (fresh || !options_.warm_start || HasDegenerateColumn(q.data(), matrix.m, r)) {
    q = SeededNormal(options_.seed, named.name, static_cast<uint64_t>(step), q.size());
  }
  // P_w = M_w Q.
  ops::Sgemm(false, false, matrix.n, r, matrix.m, 1.0F, m_data, q.data(), 0.0F,
             p_.data() + matrix.p_offset);
}

void PowerSGDCompressor::Decompress(const std::string& group, const LowRank& matrix, int world) {
  const NamedGradient& named = *matrix.named;
  const int64_t r = options_.rank;
  const float* qs = q_.data() + matrix.q_offset;
  std::vector<float>& q = qs_.Get(group, named.name, static_cast<size_t>(matrix.m * r));
  std::copy(qs, qs + q.size(), q.begin());

  // e_w = M_w first (the gradient still holds M_w), then G' overwrites the gradient.
  auto* data = named.gradient->data<float>();
  const auto elements = static_cast<size_t>(named.gradient->numel());
  std::vector<float>& residual = residuals_.Get(group, named.name, elements);
  std::copy(data, data + elements, residual.begin());
  ops::Sgemm(false, true, matrix.n, matrix.m, r, 1.0F, p_.data() + matrix.p_offset, qs, 0.0F, data);
  const auto ranks = static_cast<float>(world);
  for (size_t i = 0; i < elements; ++i) residual[i] -= data[i] / ranks;
}

}  // namespace autodist::compress
