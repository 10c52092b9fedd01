#include "runtime/optim/optimizer.h"

#include <cmath>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/optim/optimizers.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::optim {

using tensor::DType;
using tensor::ShapeToString;
using tensor::Tensor;

Optimizer::Optimizer(OptimizerOptions options) : options_(std::move(options)) {}

void Optimizer::set_learning_rate(double lr) {
  AD_CHECK(std::isfinite(lr) && lr >= 0.0, kInvalidArgument,
           "optimizer {}: learning rate must be a finite number >= 0, got {}", options_.name, lr);
  options_.lr = lr;
}

void Optimizer::ApplySparse(const std::string& name, Tensor& param,
                            const tensor::SparseGradient& grad) {
  CheckSparse(name, param, grad);
  Apply(name, param, tensor::Densify(grad));
}

void Optimizer::CheckDense(const std::string& name, const Tensor& param, const Tensor& grad) {
  AD_CHECK(param.dtype() == DType::kFloat32, kInvalidArgument,
           "optimizer: variable '{}' must be float32, got {}", name,
           tensor::DTypeName(param.dtype()));
  AD_CHECK(grad.dtype() == DType::kFloat32, kInvalidArgument,
           "optimizer: gradient of '{}' must be float32, got {}", name,
           tensor::DTypeName(grad.dtype()));
  AD_CHECK(param.shape() == grad.shape(), kInvalidArgument,
           "optimizer: gradient of '{}' has shape {}, the variable has {}", name,
           ShapeToString(grad.shape()), ShapeToString(param.shape()));
}

void Optimizer::CheckSparse(const std::string& name, const Tensor& param,
                            const tensor::SparseGradient& grad) {
  AD_CHECK(param.dtype() == DType::kFloat32, kInvalidArgument,
           "optimizer: variable '{}' must be float32, got {}", name,
           tensor::DTypeName(param.dtype()));
  AD_CHECK(param.rank() >= 1 && grad.dense_shape == param.shape(), kInvalidArgument,
           "optimizer: sparse gradient of '{}' is for shape {}, the variable has {}", name,
           ShapeToString(grad.dense_shape), ShapeToString(param.shape()));
  AD_CHECK(grad.indices.dtype() == DType::kInt64 && grad.indices.rank() == 1, kInvalidArgument,
           "optimizer: sparse gradient of '{}' needs int64 [n] row indices, got {} {}", name,
           tensor::DTypeName(grad.indices.dtype()), ShapeToString(grad.indices.shape()));
  tensor::Shape values_shape = param.shape();
  values_shape[0] = grad.indices.numel();
  AD_CHECK(grad.values.dtype() == DType::kFloat32 && grad.values.shape() == values_shape,
           kInvalidArgument, "optimizer: sparse gradient of '{}' needs float32 {} rows, got {} {}",
           name, ShapeToString(values_shape), tensor::DTypeName(grad.values.dtype()),
           ShapeToString(grad.values.shape()));
  const auto* rows = grad.indices.data<int64_t>();
  for (int64_t i = 0; i < grad.indices.numel(); ++i) {
    AD_CHECK(rows[i] >= 0 && rows[i] < param.dim(0), kInvalidArgument,
             "optimizer: sparse gradient of '{}' has row {} outside [0, {})", name, rows[i],
             param.dim(0));
    AD_CHECK(i == 0 || rows[i] > rows[i - 1], kInvalidArgument,
             "optimizer: sparse gradient of '{}' must have unique ascending rows, got {} after {}",
             name, rows[i], rows[i - 1]);
  }
}

void Optimizer::ApplyAll(const std::vector<DenseUpdate>& updates) {
  for (const DenseUpdate& update : updates) Apply(*update.name, *update.param, *update.grad);
}

namespace {

std::mutex& FactoriesMutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<tensor::DeviceKind, DeviceOptimizerFactory>& Factories() {
  static auto* factories = new std::map<tensor::DeviceKind, DeviceOptimizerFactory>();
  return *factories;
}

}  // namespace

void InstallDeviceOptimizers(tensor::DeviceKind kind, DeviceOptimizerFactory factory) {
  const std::lock_guard lock(FactoriesMutex());
  Factories()[kind] = std::move(factory);
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options,
                                         const tensor::Device& device) {
  if (device.is_cpu()) return MakeOptimizer(options);
  DeviceOptimizerFactory factory;
  {
    const std::lock_guard lock(FactoriesMutex());
    const auto it = Factories().find(device.kind);
    if (it != Factories().end()) factory = it->second;
  }
  AD_CHECK(factory != nullptr, kFailedPrecondition,
           "optimizer {}: variables on {} need the {} backend's optimizers, which this program "
           "does not have",
           options.name, tensor::DeviceName(device), tensor::DeviceKindName(device.kind));
  return factory(options, device);
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options) {
  ValidateOptimizerOptions(options);
  const std::string& name = options.name;
  if (name == "sgd") return detail::MakeSgd(options);
  if (name == "adam" || name == "adamw") return detail::MakeAdam(options);
  if (name == "adagrad") return detail::MakeAdagrad(options);
  return detail::MakeRmsprop(options);  // the only name left after validation
}

bool SparseUpdatesChangeOnlyPresentRows(const OptimizerOptions& options) {
  return MakeOptimizer(options)->SparseUpdatesChangeOnlyPresentRows();
}

}  // namespace autodist::optim
