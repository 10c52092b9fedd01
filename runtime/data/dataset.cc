#include "runtime/data/dataset.h"

#include <cmath>
#include <set>

#include "runtime/common/error.h"
#include "runtime/data/array_reader.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

tensor::Shape RowShape(const Tensor& array) {
  return {array.shape().begin() + 1, array.shape().end()};
}

bool IsImage(const Tensor& array) { return array.dtype() == DType::kUInt8 && array.rank() >= 2; }

DType FeedType(const Tensor& array) {
  switch (array.dtype()) {
    case DType::kUInt8:
      return IsImage(array) ? DType::kFloat32 : DType::kInt64;
    case DType::kInt8:
    case DType::kInt32:
    case DType::kInt64:
      return DType::kInt64;
    case DType::kFloat32:
    case DType::kFloat64:
      return DType::kFloat32;
    case DType::kBool:
      return DType::kBool;
    case DType::kUndefined:
      break;
  }
  Fail(ErrorCode::kInternal, "no feed type for {}", tensor::DTypeName(array.dtype()));
}

// Copies row `row` (of `count` elements) of `in` to `out`, converting the element type.
template <typename In, typename Out>
void CopyRow(const In* in, int64_t row, int64_t count, Out* out) {
  const In* src = in + row * count;
  // Sign extension of int8 values is intended.
  // NOLINTNEXTLINE(bugprone-signed-char-misuse)
  for (int64_t i = 0; i < count; ++i) out[i] = static_cast<Out>(src[i]);
}

template <typename Out>
void CopyRowAs(const Tensor& array, int64_t row, int64_t count, Out* out) {
  switch (array.dtype()) {
    case DType::kUInt8:
      return CopyRow(array.data<uint8_t>(), row, count, out);
    case DType::kInt8:
      return CopyRow(array.data<int8_t>(), row, count, out);
    case DType::kInt32:
      return CopyRow(array.data<int32_t>(), row, count, out);
    case DType::kInt64:
      return CopyRow(array.data<int64_t>(), row, count, out);
    case DType::kFloat32:
      return CopyRow(array.data<float>(), row, count, out);
    case DType::kFloat64:
      return CopyRow(array.data<double>(), row, count, out);
    case DType::kBool:
      return CopyRow(array.data<bool>(), row, count, out);
    case DType::kUndefined:
      break;
  }
  Fail(ErrorCode::kInternal, "copy of an undefined array");
}

// The declared row shape if it can hold `actual` (same rank with matching known dims, or equal
// element counts with at most one unknown dim, which is inferred); nullopt otherwise.
std::optional<Shape> Resolve(const std::vector<int64_t>& declared, const Shape& actual) {
  bool same = declared.size() == actual.size();
  for (size_t i = 0; same && i < declared.size(); ++i) {
    same = declared[i] < 0 || declared[i] == actual[i];
  }
  if (same) return actual;
  const int64_t count = tensor::NumElements(actual);
  int64_t known = 1;
  int unknown = -1;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i] >= 0) {
      known *= declared[i];
    } else if (unknown >= 0) {
      return std::nullopt;  // two unknown dims: ambiguous
    } else {
      unknown = static_cast<int>(i);
    }
  }
  Shape resolved(declared.begin(), declared.end());
  if (unknown < 0) return known == count ? std::optional(resolved) : std::nullopt;
  if (known == 0 || count % known != 0) return std::nullopt;
  resolved[static_cast<size_t>(unknown)] = count / known;
  return resolved;
}

}  // namespace

Dataset Dataset::FromColumns(std::vector<Column> columns, NormalizeOptions normalize) {
  AD_CHECK(!columns.empty(), kInvalidArgument, "a dataset needs at least one column");
  if (normalize.std) {
    AD_CHECK(std::isfinite(*normalize.std) && *normalize.std > 0, kInvalidArgument,
             "normalization std must be positive and finite, got {}", *normalize.std);
  }
  if (normalize.mean) {
    AD_CHECK(std::isfinite(*normalize.mean), kInvalidArgument,
             "normalization mean must be finite, got {}", *normalize.mean);
  }
  std::set<std::string> inputs;
  for (const Column& column : columns) {
    AD_CHECK(inputs.insert(column.input).second, kInvalidArgument,
             "two dataset columns feed input '{}' (the second from '{}')", column.input,
             column.source);
    AD_CHECK(column.array.defined(), kInvalidArgument, "column '{}' from '{}' has no array",
             column.input, column.source);
    AD_CHECK(column.array.rank() >= 1, kInvalidArgument,
             "column '{}' from '{}' is a scalar; a dataset column needs a first (row) dimension",
             column.input, column.source);
  }
  const Column& first = columns.front();
  for (const Column& column : columns) {
    AD_CHECK(column.array.dim(0) == first.array.dim(0), kInvalidArgument,
             "dataset columns disagree on the number of rows: '{}' ({}) has {} rows but '{}' "
             "({}) has {}",
             first.source, first.input, first.array.dim(0), column.source, column.input,
             column.array.dim(0));
  }
  const int64_t rows = first.array.dim(0);
  return {std::move(columns), normalize, rows};
}

Dataset Dataset::FromFiles(const std::vector<std::pair<std::string, std::string>>& files,
                           NormalizeOptions normalize) {
  std::vector<Column> columns;
  columns.reserve(files.size());
  for (const auto& [input, path] : files) columns.push_back({input, ReadArray(path), path});
  return FromColumns(std::move(columns), normalize);
}

std::map<std::string, Shape> Dataset::FeedRowShapes(const RowShapes& row_shapes) const {
  std::map<std::string, Shape> out;
  for (const Column& column : columns_) {
    const Shape actual = RowShape(column.array);
    const auto declared = row_shapes.find(column.input);
    if (declared == row_shapes.end()) {
      out[column.input] = actual;
      continue;
    }
    std::optional<Shape> resolved = Resolve(declared->second, actual);
    AD_CHECK(resolved.has_value(), kInvalidArgument,
             "input '{}' expects rows of shape {} but '{}' has rows of shape {} ({} values)",
             column.input, tensor::ShapeToString(declared->second), column.source,
             tensor::ShapeToString(actual), tensor::NumElements(actual));
    out[column.input] = std::move(*resolved);
  }
  return out;
}

std::map<std::string, Tensor> Dataset::Batch(const std::vector<int64_t>& rows,
                                             const RowShapes& row_shapes) const {
  for (const int64_t row : rows) {
    AD_CHECK(row >= 0 && row < rows_, kInvalidArgument, "row {} is outside the dataset of {} rows",
             row, rows_);
  }
  const std::map<std::string, Shape> feed_rows = FeedRowShapes(row_shapes);
  // torchvision: ToTensor divides by 255 in float32, Normalize subtracts and divides in float32.
  const float mean = normalize_.mean.value_or(0.0F);
  const float stddev = normalize_.std.value_or(1.0F);
  const bool normalize = normalize_.mean.has_value() || normalize_.std.has_value();

  std::map<std::string, Tensor> feeds;
  for (const Column& column : columns_) {
    const Tensor& array = column.array;
    Shape shape = feed_rows.at(column.input);
    shape.insert(shape.begin(), static_cast<int64_t>(rows.size()));
    Tensor feed(FeedType(array), std::move(shape));
    const int64_t count = array.dim(0) == 0 ? 0 : array.numel() / array.dim(0);
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t offset = static_cast<int64_t>(i) * count;
      switch (feed.dtype()) {
        case DType::kFloat32: {
          float* out = feed.data<float>() + offset;
          CopyRowAs(array, rows[i], count, out);
          if (!IsImage(array)) break;
          for (int64_t j = 0; j < count; ++j) out[j] = out[j] / 255.0F;
          if (normalize) {
            for (int64_t j = 0; j < count; ++j) out[j] = (out[j] - mean) / stddev;
          }
          break;
        }
        case DType::kInt64:
          CopyRowAs(array, rows[i], count, feed.data<int64_t>() + offset);
          break;
        case DType::kBool:
          CopyRowAs(array, rows[i], count, feed.data<bool>() + offset);
          break;
        default:
          Fail(ErrorCode::kInternal, "unexpected feed type {}", tensor::DTypeName(feed.dtype()));
      }
    }
    feeds.emplace(column.input, std::move(feed));
  }
  return feeds;
}

}  // namespace autodist::data
