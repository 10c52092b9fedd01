// Helpers shared by the parameter-server tests.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/ps/service.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ps::testing {

using tensor::DType;
using tensor::Tensor;

// How Steps travel: the suites run once per transport, since each must give the same results.
enum class PsTransport { kGrpc, kDataChannel };
inline constexpr std::array<PsTransport, 2> kPsTransports = {PsTransport::kGrpc,
                                                             PsTransport::kDataChannel};
inline const char* NameOf(PsTransport transport) {
  return transport == PsTransport::kGrpc ? "Grpc" : "DataChannel";
}
inline std::string PsTransportName(const ::testing::TestParamInfo<PsTransport>& info) {
  return NameOf(info.param);
}
// Test names say "GetParam() = DataChannel", not the enum's bytes.
inline void PrintTo(PsTransport transport, std::ostream* out) { *out << NameOf(transport); }
// Makes `service` serve Steps as `transport` says (gRPC always serves them).
inline void ServeTransport(ParameterServerService& service, PsTransport transport) {
  if (transport == PsTransport::kDataChannel) service.ServeDataChannel("127.0.0.1");
}

// Deterministic values in [-1, 1).
inline Tensor Random(tensor::Shape shape, uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0F, 1.0F);
  Tensor out(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = uniform(engine);
  return out;
}

inline Tensor Floats(tensor::Shape shape, const std::vector<float>& values) {
  return Tensor::FromVector<float>(std::move(shape), values);
}

inline tensor::SparseGradient Sparse(const std::vector<int64_t>& rows, Tensor values,
                                     tensor::Shape dense_shape) {
  return {Tensor::FromVector<int64_t>({static_cast<int64_t>(rows.size())}, rows), std::move(values),
          std::move(dense_shape)};
}

// Same dtype, shape and bytes.
inline ::testing::AssertionResult BitEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << "shape " << tensor::ShapeToString(a.shape()) << " vs "
                                         << tensor::ShapeToString(b.shape());
  }
  if (std::memcmp(a.raw(), b.raw(), a.nbytes()) != 0) {
    for (int64_t i = 0; i < a.numel() && a.dtype() == DType::kFloat32; ++i) {
      if (a.data<float>()[i] != b.data<float>()[i]) {
        return ::testing::AssertionFailure()
               << "element " << i << ": " << a.data<float>()[i] << " vs " << b.data<float>()[i];
      }
    }
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

// The error `body` throws ("no error" when it returns).
inline Error ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorCode::kInternal, "no error");
}

// p - lr * d as SGD computes it (one rounding, optim/rules/element_math.h).
inline float SgdStep(float p, float d, double lr) {
  const auto neg_lr = static_cast<float>(-lr);
  return static_cast<float>(static_cast<double>(d) * static_cast<double>(neg_lr) +
                            static_cast<double>(p));
}

}  // namespace autodist::ps::testing
