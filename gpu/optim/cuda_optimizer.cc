#include "gpu/optim/cuda_optimizer.h"

#include <memory>
#include <vector>

#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/optim/fused_optimizer.h"
#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"

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

  void ApplySparse(const std::string& name, Tensor& /*param*/,
                   const tensor::SparseGradient& /*grad*/) override {
    Fail(ErrorCode::kInvalidArgument,
         "optimizer {}: '{}' has a row-sparse gradient, which {} does not update yet",
         options_.name, name, tensor::DeviceName(device_));
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
