#include "runtime/tensor/sparse_gradient.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "runtime/common/error.h"

namespace autodist::tensor {

Tensor GatherRows(const Tensor& from, const std::vector<int64_t>& rows) {
  AD_CHECK(from.rank() >= 1, kInternal, "cannot take rows of a scalar");
  Shape shape = from.shape();
  const size_t row_bytes = shape[0] == 0 ? 0 : from.nbytes() / static_cast<size_t>(shape[0]);
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out(from.dtype(), shape);
  const auto* source = static_cast<const std::byte*>(from.raw());
  auto* target = static_cast<std::byte*>(out.raw());
  for (size_t k = 0; k < rows.size(); ++k) {
    std::memcpy(target + k * row_bytes, source + static_cast<size_t>(rows[k]) * row_bytes,
                row_bytes);
  }
  return out;
}

SparseGradient CoalesceRows(const std::vector<int64_t>& indices, const Tensor& values,
                            const Shape& dense_shape) {
  const auto n = static_cast<int64_t>(indices.size());
  const int64_t row =
      n == 0 ? NumElements(Shape(dense_shape.begin() + 1, dense_shape.end())) : values.numel() / n;
  const RowGroups groups = GroupByRow(indices);
  const auto unique = static_cast<int64_t>(groups.rows.size());
  Shape values_shape = dense_shape;
  values_shape[0] = unique;
  SparseGradient out;
  out.dense_shape = dense_shape;
  out.values = Tensor::Zeros(DType::kFloat32, values_shape);
  out.indices = Tensor::FromVector<int64_t>({unique}, groups.rows);
  const auto* in = values.data<float>();
  auto* sum = out.values.data<float>();
  for (int64_t slot = 0; slot < unique; ++slot) {
    float* dst = sum + slot * row;
    // Summed in the order rows appear, so the result does not depend on sorting details.
    for (auto p = static_cast<size_t>(groups.starts[static_cast<size_t>(slot)]);
         p < static_cast<size_t>(groups.starts[static_cast<size_t>(slot) + 1]); ++p) {
      const float* src = in + groups.order[p] * row;
      for (int64_t k = 0; k < row; ++k) dst[k] += src[k];
    }
  }
  return out;
}

RowGroups GroupByRow(const std::vector<int64_t>& indices) {
  RowGroups groups;
  groups.order.resize(indices.size());
  std::iota(groups.order.begin(), groups.order.end(), 0);
  std::stable_sort(groups.order.begin(), groups.order.end(), [&](int64_t a, int64_t b) {
    return indices[static_cast<size_t>(a)] < indices[static_cast<size_t>(b)];
  });
  for (size_t p = 0; p < groups.order.size(); ++p) {
    const int64_t row = indices[static_cast<size_t>(groups.order[p])];
    if (groups.rows.empty() || groups.rows.back() != row) {
      groups.rows.push_back(row);
      groups.starts.push_back(static_cast<int64_t>(p));
    }
  }
  groups.starts.push_back(static_cast<int64_t>(indices.size()));
  return groups;
}

SparseGradient MergeSparse(const std::vector<const SparseGradient*>& parts) {
  AD_CHECK(!parts.empty(), kInternal, "merging no sparse gradients");
  if (parts.size() == 1) return *parts[0];
  std::vector<int64_t> indices;
  int64_t rows = 0;
  for (const auto* part : parts) rows += part->indices.numel();
  Shape values_shape = parts[0]->dense_shape;
  values_shape[0] = rows;
  Tensor values(DType::kFloat32, values_shape);
  auto* out = static_cast<std::byte*>(values.raw());
  for (const auto* part : parts) {
    const std::vector<int64_t> part_indices = part->indices.ToInt64Vector("sparse gradient");
    indices.insert(indices.end(), part_indices.begin(), part_indices.end());
    std::memcpy(out, part->values.raw(), part->values.nbytes());
    out += part->values.nbytes();
  }
  return CoalesceRows(indices, values, parts[0]->dense_shape);
}

SparseGradient MergeSparse(const std::vector<SparseGradient>& parts) {
  std::vector<const SparseGradient*> pointers;
  pointers.reserve(parts.size());
  for (const SparseGradient& part : parts) pointers.push_back(&part);
  return MergeSparse(pointers);
}

Tensor Densify(const SparseGradient& gradient) {
  Tensor out = Tensor::Zeros(DType::kFloat32, gradient.dense_shape);
  const int64_t n = gradient.indices.numel();
  if (n == 0) return out;
  const int64_t row = gradient.values.numel() / n;
  const std::vector<int64_t> indices = gradient.indices.ToInt64Vector("sparse gradient");
  const float* src = gradient.values.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = indices[static_cast<size_t>(i)];
    AD_CHECK(r >= 0 && r < gradient.dense_shape[0], kInternal, "sparse row {} out of range", r);
    for (int64_t k = 0; k < row; ++k) dst[r * row + k] += src[i * row + k];
  }
  return out;
}

SparseGradient SparseTo(const SparseGradient& gradient, const Device& device) {
  return SparseGradient{gradient.indices.To(device), gradient.values.To(device),
                        gradient.dense_shape};
}

}  // namespace autodist::tensor
