#include "runtime/ops/tensor/layout.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/common/error.h"
#include "runtime/ops/parallel.h"

namespace autodist::ops {
namespace {

// Work below this many bytes is not worth a thread of its own.
constexpr int64_t kGrainBytes = int64_t{1} << 16;
// A transposed pair of axes is copied in kTile x kTile blocks (see CopyTransposed).
constexpr int64_t kTile = 64;

struct Dim {
  int64_t size;
  int64_t src;  // stride in elements
  int64_t dst;
};

// Drops size-1 axes and merges neighbours that are contiguous in both layouts, so that e.g. a
// row-major copy becomes one axis and a copy of whole rows becomes [rows, row length].
std::vector<Dim> Simplify(const Shape& shape, const std::vector<int64_t>& src_strides,
                          const std::vector<int64_t>& dst_strides) {
  std::vector<Dim> dims;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;
    const Dim next{shape[k], src_strides[k], dst_strides[k]};
    if (!dims.empty() && dims.back().src == next.src * next.size &&
        dims.back().dst == next.dst * next.size) {
      dims.back() = Dim{dims.back().size * next.size, next.src, next.dst};
      continue;
    }
    dims.push_back(next);
  }
  return dims;
}

// Walks a set of axes in row-major order from a given linear position, tracking the source and
// destination offsets.
class Odometer {
 public:
  Odometer(std::vector<Dim> dims, int64_t start) : dims_(std::move(dims)), counter_(dims_.size()) {
    for (size_t k = dims_.size(); k-- > 0;) {
      counter_[k] = start % dims_[k].size;
      start /= dims_[k].size;
      src_ += counter_[k] * dims_[k].src;
      dst_ += counter_[k] * dims_[k].dst;
    }
  }

  int64_t src() const { return src_; }
  int64_t dst() const { return dst_; }

  void Next() {
    for (size_t k = dims_.size(); k-- > 0;) {
      src_ += dims_[k].src;
      dst_ += dims_[k].dst;
      if (++counter_[k] < dims_[k].size) return;
      src_ -= dims_[k].src * dims_[k].size;
      dst_ -= dims_[k].dst * dims_[k].size;
      counter_[k] = 0;
    }
  }

 private:
  std::vector<Dim> dims_;
  std::vector<int64_t> counter_;
  int64_t src_ = 0;
  int64_t dst_ = 0;
};

int64_t Count(const std::vector<Dim>& dims) {
  int64_t count = 1;
  for (const Dim& dim : dims) count *= dim.size;
  return count;
}

// A fixed-size memcpy compiles to one load and one store, and (unlike a cast to an integer
// pointer) is valid whatever type the bytes hold.
template <size_t E>
void CopyLine(const std::byte* src, int64_t src_stride, std::byte* dst, int64_t dst_stride,
              int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(dst + i * dst_stride * E, src + i * src_stride * E, E);
}

// Inner axis contiguous on both sides: memcpy whole rows, splitting long rows into chunks when
// there are too few rows to keep every thread busy.
void CopyRows(const std::byte* src, std::byte* dst, const std::vector<Dim>& outer,
              int64_t row_bytes) {
  const int64_t rows = Count(outer);
  const int64_t chunks =
      rows >= NumThreads() ? 1 : std::max<int64_t>(1, (row_bytes + kGrainBytes - 1) / kGrainBytes);
  const int64_t chunk_bytes = (row_bytes + chunks - 1) / chunks;
  const int64_t unit_bytes = std::max<int64_t>(1, std::min(row_bytes, chunk_bytes));
  ParallelFor(rows * chunks, std::max<int64_t>(1, kGrainBytes / unit_bytes),
              [&](int64_t begin, int64_t end) {
                int64_t row = begin / chunks;
                Odometer position(outer, row);
                for (int64_t unit = begin; unit < end; ++unit) {
                  for (; row < unit / chunks; ++row) position.Next();
                  const int64_t from = (unit % chunks) * chunk_bytes;
                  const int64_t length = std::min(chunk_bytes, row_bytes - from);
                  if (length <= 0) continue;
                  std::memcpy(dst + position.dst() + from, src + position.src() + from,
                              static_cast<size_t>(length));
                }
              });
}

// A transpose: axis `a` is contiguous in src (a.src == 1) and axis `b` in dst (b.dst == 1), for
// every position of the `outer` axes. Each kTile x kTile block is read into a buffer with
// contiguous runs along a, then written out with contiguous runs along b; the buffer stays in L1
// however large (or power-of-two, which maps every row to one cache set) the strides are.
template <size_t E>
void CopyTransposed(const std::byte* src, std::byte* dst, const std::vector<Dim>& outer, Dim a,
                    Dim b) {
  const int64_t a_tiles = (a.size + kTile - 1) / kTile;
  const int64_t unit_bytes = std::min(a.size, kTile) * b.size * static_cast<int64_t>(E);
  ParallelFor(Count(outer) * a_tiles, std::max<int64_t>(1, kGrainBytes / unit_bytes),
              [&](int64_t begin, int64_t end) {
                alignas(64) std::array<std::byte, kTile * kTile * E> buffer;
                int64_t block = begin / a_tiles;
                Odometer position(outer, block);
                for (int64_t unit = begin; unit < end; ++unit) {
                  for (; block < unit / a_tiles; ++block) position.Next();
                  const int64_t a0 = (unit % a_tiles) * kTile;
                  const int64_t na = std::min(kTile, a.size - a0);
                  for (int64_t b0 = 0; b0 < b.size; b0 += kTile) {
                    const int64_t nb = std::min(kTile, b.size - b0);
                    const std::byte* from = src + (position.src() + a0 + b0 * b.src) * E;
                    for (int64_t j = 0; j < nb; ++j) {
                      std::memcpy(buffer.data() + j * kTile * E, from + j * b.src * E,
                                  static_cast<size_t>(na) * E);
                    }
                    std::byte* to = dst + (position.dst() + a0 * a.dst + b0) * E;
                    for (int64_t i = 0; i < na; ++i) {
                      CopyLine<E>(buffer.data() + i * E, kTile, to + i * a.dst * E, 1, nb);
                    }
                  }
                }
              });
}

template <size_t E>
void CopyTyped(const std::byte* src, std::byte* dst, std::vector<Dim> dims) {
  if (dims.empty()) {
    std::memcpy(dst, src, E);
    return;
  }
  const Dim inner = dims.back();
  dims.pop_back();
  if (inner.src == 1 && inner.dst == 1) {
    // Offsets below are in bytes for the memcpy path.
    for (Dim& dim : dims) {
      dim.src *= static_cast<int64_t>(E);
      dim.dst *= static_cast<int64_t>(E);
    }
    CopyRows(src, dst, dims, inner.size * static_cast<int64_t>(E));
    return;
  }

  // An outer axis that is contiguous on the side where the inner axis is strided: a transpose.
  for (size_t k = 0; k < dims.size(); ++k) {
    const bool src_runs_along_k = inner.dst == 1 && dims[k].src == 1;
    if (src_runs_along_k || (inner.src == 1 && dims[k].dst == 1)) {
      const Dim across = dims[k];
      dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(k));
      if (src_runs_along_k) {
        CopyTransposed<E>(src, dst, dims, across, inner);
      } else {
        CopyTransposed<E>(src, dst, dims, inner, across);
      }
      return;
    }
  }

  // Anything else (a strided slice): element by element along the inner axis.
  const int64_t line_bytes = std::max<int64_t>(1, inner.size * static_cast<int64_t>(E));
  ParallelFor(Count(dims), std::max<int64_t>(1, kGrainBytes / line_bytes),
              [&](int64_t begin, int64_t end) {
                Odometer position(dims, begin);
                for (int64_t line = begin; line < end; ++line, position.Next()) {
                  CopyLine<E>(src + position.src() * E, inner.src, dst + position.dst() * E,
                              inner.dst, inner.size);
                }
              });
}

}  // namespace

int64_t NormalizeAxis(int64_t axis, int64_t rank, const std::string& node,
                      const std::string& what) {
  AD_CHECK(axis >= -rank && axis < rank, kInvalidArgument,
           "{}: {} {} is out of range for rank {} (expected [{}, {}])", node, what, axis, rank,
           -rank, rank - 1);
  return axis < 0 ? axis + rank : axis;
}

void CopyStrided(const void* src, const std::vector<int64_t>& src_strides, void* dst,
                 const std::vector<int64_t>& dst_strides, const Shape& shape, size_t element_size) {
  AD_CHECK(src_strides.size() == shape.size() && dst_strides.size() == shape.size(), kInternal,
           "strided copy of shape {} with {} and {} strides", tensor::ShapeToString(shape),
           src_strides.size(), dst_strides.size());
  if (tensor::NumElements(shape) == 0) return;
  std::vector<Dim> dims = Simplify(shape, src_strides, dst_strides);
  const auto* from = static_cast<const std::byte*>(src);
  auto* to = static_cast<std::byte*>(dst);
  switch (element_size) {
    case 1:
      return CopyTyped<1>(from, to, std::move(dims));
    case 2:
      return CopyTyped<2>(from, to, std::move(dims));
    case 4:
      return CopyTyped<4>(from, to, std::move(dims));
    case 8:
      return CopyTyped<8>(from, to, std::move(dims));
    default:
      Fail(ErrorCode::kInternal, "strided copy of {}-byte elements", element_size);
  }
}

int64_t DimProduct(const Shape& shape, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t k = begin; k < end; ++k) product *= shape[k];
  return product;
}

void CopyAxisRange(const void* src, int64_t src_axis, int64_t src_begin, void* dst,
                   int64_t dst_axis, int64_t dst_begin, int64_t count, int64_t outer, int64_t inner,
                   size_t element_size) {
  if (outer == 0 || count == 0 || inner == 0) return;
  const auto e = static_cast<int64_t>(element_size);
  CopyStrided(static_cast<const std::byte*>(src) + src_begin * inner * e, {src_axis * inner, 1},
              static_cast<std::byte*>(dst) + dst_begin * inner * e, {dst_axis * inner, 1},
              {outer, count * inner}, element_size);
}

}  // namespace autodist::ops
