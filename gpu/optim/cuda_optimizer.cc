#include "gpu/optim/cuda_optimizer.h"

#include <memory>
#include <vector>

#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/optim/fused_optimizer.h"
#include "gpu/optim/multi_tensor_update.h"
#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::gpu {
namespace {

using tensor::Tensor;

class CudaOptimizer final : public optim::Optimizer {
 public:
  CudaOptimizer(const optim::OptimizerOptions& options, const tensor::Device& device)
      : Optimizer(options),
        device_(device),
        fused_(MakeFusedOptimizer(options, TensorPool(device.index), TensorStream(device.index))) {}

  void Apply(const std::string& name, Tensor& param, const Tensor& grad) override {
    ApplyAll({optim::DenseUpdate{&name, &param, &grad}});
  }

  void ApplyAll(const std::vector<optim::DenseUpdate>& updates) override {
    UseGpu(device_.index);  // the optimizer's GPU, of several a process may drive
    std::vector<DeviceVariable> variables;
    variables.reserve(updates.size());
    for (const optim::DenseUpdate& update : updates) {
      CheckDense(*update.name, *update.param, *update.grad);
      for (const Tensor* t : {static_cast<const Tensor*>(update.param), update.grad}) {
        AD_CHECK(t->device() == device_, kInternal,
                 "optimizer {}: '{}' is on {}, the optimizer's variables on {}", options_.name,
                 *update.name, tensor::DeviceName(t->device()), tensor::DeviceName(device_));
      }
      variables.push_back(DeviceVariable{*update.name, update.param->shape(),
                                         update.param->device_data<float>(),
                                         update.grad->device_data<float>()});
    }
    fused_->set_learning_rate(options_.lr);
    fused_->Step(variables);
  }

  // The CPU optimizers' rule (optim/elementwise_optimizer.h): only the present rows where the
  // update rule is row-wise exact or lazy_sparse asks for it, else the dense update of the
  // densified gradient.
  void ApplySparse(const std::string& name, Tensor& param,
                   const tensor::SparseGradient& grad) override {
    AD_CHECK(param.device() == device_ && grad.values.device() == device_, kInternal,
             "optimizer {}: '{}' and its sparse gradient are on {} and {}, the optimizer's "
             "variables on {}",
             options_.name, name, tensor::DeviceName(param.device()),
             tensor::DeviceName(grad.values.device()), tensor::DeviceName(device_));
    UseGpu(device_.index);
    // The rows are checked on the host (a copy of the indices), the values' shape as it is.
    CheckSparse(name, param,
                tensor::SparseGradient{grad.indices.To(tensor::Device::Cpu()), grad.values,
                                       grad.dense_shape});
    const Tensor rows = grad.indices.To(device_);
    const int64_t count = rows.numel();
    const int64_t row_elements = param.dim(0) == 0 ? 0 : param.numel() / param.dim(0);
    if (fused_->UpdatesOnlyPresentRows()) {
      fused_->set_learning_rate(options_.lr);
      fused_->StepRows(DeviceVariable{name, param.shape(), param.device_data<float>(),
                                      grad.values.device_data<float>()},
                       rows.device_data<int64_t>(), count);
      return;
    }
    Tensor dense(tensor::DType::kFloat32, param.shape(), device_);
    detail::ScatterRowsAsync(grad.values.device_data<float>(), rows.device_data<int64_t>(), count,
                             row_elements, dense.device_data<float>(), dense.numel(),
                             TensorStream(device_.index));
    Apply(name, param, dense);
  }

  bool SparseUpdatesChangeOnlyPresentRows() const override {
    return fused_->UpdatesOnlyPresentRows();
  }

  std::map<std::string, Tensor> SaveState() const override { return fused_->SaveState(); }
  void LoadState(const std::map<std::string, Tensor>& state) override { fused_->LoadState(state); }

 private:
  tensor::Device device_;
  std::unique_ptr<FusedOptimizer> fused_;
};

}  // namespace

void InstallCudaOptimizers() {
  optim::InstallDeviceOptimizers(
      tensor::DeviceKind::kCuda,
      [](const optim::OptimizerOptions& options,
         const tensor::Device& device) -> std::unique_ptr<optim::Optimizer> {
        optim::ValidateOptimizerOptions(options);
        return std::make_unique<CudaOptimizer>(options, device);
      });
}

}  // namespace autodist::gpu
