#include "runtime/sync/sparse_all_gather.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace autodist::sync {

GatheredSparse AllGatherSparse(collective::Communicator& communicator,
                               const tensor::SparseGradient& local, const std::string& tag) {
  const int64_t rows = local.indices.numel();
  const int64_t row_elements = rows == 0 ? tensor::NumElements(local.dense_shape) /
                                               std::max<int64_t>(local.dense_shape.at(0), 1)
                                         : local.values.numel() / rows;
  std::vector<std::byte> indices;
  std::vector<std::byte> values;
  GatheredSparse out;
  const int64_t sent_before = communicator.bytes_sent();
  const std::vector<size_t> counts =
      communicator.AllGatherV(local.indices.raw(), static_cast<size_t>(rows),
                              collective::ElementType::kInt64, indices, tag + "/indices");
  communicator.AllGatherV(local.values.raw(), static_cast<size_t>(rows * row_elements),
                          collective::ElementType::kFloat32, values, tag + "/rows");
  out.sent_bytes = communicator.bytes_sent() - sent_before;
  out.local_bytes = static_cast<int64_t>(local.indices.nbytes() + local.values.nbytes());

  std::vector<tensor::SparseGradient> parts;
  size_t row_offset = 0;
  for (const size_t count : counts) {
    tensor::SparseGradient part;
    part.dense_shape = local.dense_shape;
    const auto n = static_cast<int64_t>(count);
    part.indices = tensor::Tensor(tensor::DType::kInt64, {n});
    tensor::Shape shape = local.values.shape();
    shape[0] = n;
    part.values = tensor::Tensor(tensor::DType::kFloat32, shape);
    std::memcpy(part.indices.raw(), indices.data() + row_offset * sizeof(int64_t),
                part.indices.nbytes());
    std::memcpy(part.values.raw(),
                values.data() + row_offset * static_cast<size_t>(row_elements) * sizeof(float),
                part.values.nbytes());
    row_offset += count;
    parts.push_back(std::move(part));
  }
  out.merged = tensor::MergeSparse(parts);
  return out;
}

}  // namespace autodist::sync
