#include "runtime/ops/math/matmul_shape.h"

#include "runtime/common/error.h"
#include "runtime/tensor/broadcast.h"

namespace autodist::ops {

MatMulShape ResolveMatMul(const Shape& a, const Shape& b, const std::string& describe) {
  AD_CHECK(!a.empty() && !b.empty(), kInvalidArgument,
           "{}: operands must have rank >= 1, got {} and {}", describe, tensor::ShapeToString(a),
           tensor::ShapeToString(b));
  MatMulShape s;
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  s.m = a_vector ? 1 : a[a.size() - 2];
  s.k = a.back();
  const int64_t kb = b_vector ? b[0] : b[b.size() - 2];
  s.n = b_vector ? 1 : b.back();
  AD_CHECK(s.k == kb, kInvalidArgument, "{}: inner dimensions differ: {} and {}", describe,
           tensor::ShapeToString(a), tensor::ShapeToString(b));
  const Shape a_batch(a.begin(), a.end() - (a_vector ? 1 : 2));
  const Shape b_batch(b.begin(), b.end() - (b_vector ? 1 : 2));
  s.batch = tensor::BroadcastShapes(a_batch, b_batch, describe + ": batch axes");
  const int64_t entries = tensor::NumElements(s.batch);
  s.a_broadcast = tensor::NumElements(a_batch) != entries;
  s.b_broadcast = tensor::NumElements(b_batch) != entries;
  s.b_single = tensor::NumElements(b_batch) == 1;
  s.a_offsets.reserve(static_cast<size_t>(entries));
  s.b_offsets.reserve(static_cast<size_t>(entries));
  tensor::ForEachBroadcast(s.batch, tensor::BroadcastStrides(a_batch, s.batch),
                           tensor::BroadcastStrides(b_batch, s.batch),
                           [&](int64_t /*out*/, int64_t ai, int64_t bi) {
                             s.a_offsets.push_back(ai * s.m * s.k);
                             s.b_offsets.push_back(bi * s.k * s.n);
                           });
  s.out_shape = s.batch;
  if (!a_vector) s.out_shape.push_back(s.m);
  if (!b_vector) s.out_shape.push_back(s.n);
  return s;
}

}  // namespace autodist::ops
