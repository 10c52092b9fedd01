#include "runtime/sync/shard.h"

#include <cstring>

#include "runtime/common/error.h"

namespace autodist::sync {
namespace {

using tensor::Shape;
using tensor::Tensor;

// A tensor viewed as [outer, axis, inner] around `axis`, in bytes for the inner block.
struct AxisView {
  int64_t outer = 1;
  int64_t dim = 1;
  int64_t inner_bytes = 0;
};

AxisView ViewAround(const Tensor& t, int axis) {
  AxisView view;
  if (t.rank() == 0) {
    view.inner_bytes = static_cast<int64_t>(t.nbytes());
    return view;
  }
  const auto a = static_cast<size_t>(axis);
  for (size_t i = 0; i < a; ++i) view.outer *= t.dim(i);
  view.dim = t.dim(a);
  int64_t inner = 1;
  for (size_t i = a + 1; i < t.rank(); ++i) inner *= t.dim(i);
  view.inner_bytes = inner * static_cast<int64_t>(tensor::ElementSize(t.dtype()));
  return view;
}

// Copies `rows` blocks of `extent * inner_bytes` between two [outer, dim, inner] layouts.
void CopyBlocks(const std::byte* from, int64_t from_dim, int64_t from_offset, std::byte* to,
                int64_t to_dim, int64_t to_offset, int64_t outer, int64_t extent,
                int64_t inner_bytes) {
  const auto block = static_cast<size_t>(extent * inner_bytes);
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(to + (o * to_dim + to_offset) * inner_bytes,
                from + (o * from_dim + from_offset) * inner_bytes, block);
  }
}

void CheckRange(const Shape& shape, const ShardRange& range) {
  if (shape.empty()) {
    AD_CHECK(range.axis == 0 && range.offset == 0 && range.extent == 1, kInternal,
             "shard range does not fit a scalar");
    return;
  }
  AD_CHECK(range.axis >= 0 && static_cast<size_t>(range.axis) < shape.size() && range.offset >= 0 &&
               range.extent >= 0 &&
               range.offset + range.extent <= shape[static_cast<size_t>(range.axis)],
           kInternal, "shard range axis {} [{}, {}) does not fit shape {}", range.axis,
           range.offset, range.offset + range.extent, tensor::ShapeToString(shape));
}

}  // namespace

ShardRange ShardRange::Whole(const Shape& shape) {
  return ShardRange{0, 0, shape.empty() ? 1 : shape[0]};
}

Shape ShardRange::ShapeIn(const Shape& shape) const {
  if (shape.empty()) return shape;
  Shape out = shape;
  out[static_cast<size_t>(axis)] = extent;
  return out;
}

Tensor Slice(const Tensor& whole, const ShardRange& range) {
  CheckRange(whole.shape(), range);
  Tensor part(whole.dtype(), range.ShapeIn(whole.shape()));
  const AxisView view = ViewAround(whole, range.axis);
  CopyBlocks(static_cast<const std::byte*>(whole.raw()), view.dim, range.offset,
             static_cast<std::byte*>(part.raw()), range.extent, 0, view.outer, range.extent,
             view.inner_bytes);
  return part;
}

void WriteSlice(Tensor& whole, const Tensor& part, const ShardRange& range, const char* what) {
  CheckRange(whole.shape(), range);
  const Shape expected = range.ShapeIn(whole.shape());
  AD_CHECK(part.dtype() == whole.dtype() && part.shape() == expected, kInvalidArgument,
           "{}: expected a {} tensor of shape {}, got {} of shape {}", what,
           tensor::DTypeName(whole.dtype()), tensor::ShapeToString(expected),
           tensor::DTypeName(part.dtype()), tensor::ShapeToString(part.shape()));
  const AxisView view = ViewAround(whole, range.axis);
  CopyBlocks(static_cast<const std::byte*>(part.raw()), range.extent, 0,
             static_cast<std::byte*>(whole.raw()), view.dim, range.offset, view.outer, range.extent,
             view.inner_bytes);
}

void WriteRows(Tensor& whole, const tensor::SparseGradient& rows, const ShardRange& range,
               const char* what) {
  CheckRange(whole.shape(), range);
  AD_CHECK(range.axis == 0 && whole.rank() >= 1, kInvalidArgument,
           "{}: rows were sent for a shard along axis {} of a {} tensor; only shards along axis 0 "
           "take rows",
           what, range.axis, tensor::ShapeToString(whole.shape()));
  Shape expected = whole.shape();
  expected[0] = rows.indices.numel();
  AD_CHECK(rows.values.dtype() == whole.dtype() && rows.values.shape() == expected &&
               rows.indices.dtype() == tensor::DType::kInt64 && rows.indices.rank() == 1,
           kInvalidArgument,
           "{}: expected {} rows of shape {} with int64 indices, got {} {} with {} indices {}",
           what, tensor::DTypeName(whole.dtype()), tensor::ShapeToString(expected),
           tensor::DTypeName(rows.values.dtype()), tensor::ShapeToString(rows.values.shape()),
           tensor::DTypeName(rows.indices.dtype()), tensor::ShapeToString(rows.indices.shape()));
  const int64_t count = rows.indices.numel();
  const auto row_bytes = static_cast<size_t>(
      whole.shape()[0] == 0 ? 0 : whole.nbytes() / static_cast<size_t>(whole.shape()[0]));
  const auto* index = rows.indices.data<int64_t>();
  const auto* from = static_cast<const std::byte*>(rows.values.raw());
  auto* to = static_cast<std::byte*>(whole.raw());
  for (int64_t k = 0; k < count; ++k) {  // all checked before any is written
    AD_CHECK(index[k] >= 0 && index[k] < range.extent, kInvalidArgument,
             "{}: row {} is outside the shard's {} rows", what, index[k], range.extent);
  }
  for (int64_t k = 0; k < count; ++k) {
    std::memcpy(to + static_cast<size_t>(range.offset + index[k]) * row_bytes,
                from + static_cast<size_t>(k) * row_bytes, row_bytes);
  }
}

tensor::SparseGradient SliceSparse(const tensor::SparseGradient& gradient,
                                   const ShardRange& range) {
  CheckRange(gradient.dense_shape, range);
  tensor::SparseGradient out;
  out.dense_shape = range.ShapeIn(gradient.dense_shape);
  const int64_t rows = gradient.indices.numel();
  const auto* indices = gradient.indices.data<int64_t>();
  if (range.axis != 0) {
    // Every row is present in every shard; cut each row (a [rows, ...] tensor) along axis - 1 of
    // the row, which is `axis` of the values tensor.
    out.indices = gradient.indices.Clone();
    out.values = Slice(gradient.values, range);
    return out;
  }
  std::vector<int64_t> kept;
  for (int64_t r = 0; r < rows; ++r) {
    if (indices[r] >= range.offset && indices[r] < range.offset + range.extent) kept.push_back(r);
  }
  out.values = tensor::GatherRows(gradient.values, kept);
  out.indices = Tensor(tensor::DType::kInt64, {static_cast<int64_t>(kept.size())});
  auto* out_indices = out.indices.data<int64_t>();
  for (size_t k = 0; k < kept.size(); ++k) out_indices[k] = indices[kept[k]] - range.offset;
  return out;
}

}  // namespace autodist::sync
