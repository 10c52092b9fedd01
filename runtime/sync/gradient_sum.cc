#include "runtime/sync/gradient_sum.h"

#include "runtime/common/error.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::sync {

exec::Gradient SumGradients(const std::vector<const exec::Gradient*>& parts) {
  AD_CHECK(!parts.empty(), kInternal, "no gradients to sum");
  if (parts.size() == 1) return *parts[0];
  exec::Gradient sum;
  if (parts[0]->is_sparse()) {
    std::vector<const tensor::SparseGradient*> sparse;
    for (const exec::Gradient* part : parts) {
      AD_CHECK(part->is_sparse(), kInternal, "replicas disagree on a gradient's sparsity");
      sparse.push_back(&*part->sparse);
    }
    sum.sparse = tensor::MergeSparse(sparse);
    return sum;
  }
  sum.dense = parts[0]->dense.Clone();
  float* out = sum.dense.data<float>();
  for (size_t r = 1; r < parts.size(); ++r) {
    AD_CHECK(!parts[r]->is_sparse() && parts[r]->dense.shape() == sum.dense.shape(), kInternal,
             "replica {} has a gradient of another kind or shape", r);
    const float* add = parts[r]->dense.data<float>();
    for (int64_t i = 0; i < sum.dense.numel(); ++i) out[i] += add[i];
  }
  return sum;
}

void ScaleGradient(exec::Gradient& gradient, float factor) {
  tensor::Tensor& values = gradient.is_sparse() ? gradient.sparse->values : gradient.dense;
  float* data = values.data<float>();
  for (int64_t i = 0; i < values.numel(); ++i) data[i] *= factor;
}

}  // namespace autodist::sync
