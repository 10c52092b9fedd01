#include "runtime/exec/standalone_kernel.h"

#include <onnx/onnx_pb.h>

#include "runtime/ops/kernel.h"
#include "runtime/ops/node_info.h"
#include "runtime/ops/registry.h"

namespace autodist::exec {

// Opset 13: ReduceSum takes its axes as an input, and reduces every axis without it.
constexpr int64_t kOpset = 13;

StandaloneKernel::StandaloneKernel(const std::string& op_type, const std::string& name,
                                   const tensor::Device& device,
                                   const std::vector<std::pair<std::string, int64_t>>& attributes)
    : proto_(std::make_unique<onnx::NodeProto>()) {
  proto_->set_op_type(op_type);
  proto_->set_name(name);
  for (const auto& [key, value] : attributes) {
    onnx::AttributeProto* attribute = proto_->add_attribute();
    attribute->set_name(key);
    attribute->set_type(onnx::AttributeProto::INT);
    attribute->set_i(value);
  }
  info_ = std::make_unique<ops::NodeInfo>(*proto_, kOpset, ops::Precision::kFp32, device);
  kernel_ = ops::KernelRegistry::Global().Create(*info_, device.kind);
}

StandaloneKernel::~StandaloneKernel() = default;

tensor::Tensor StandaloneKernel::Run(const std::vector<const tensor::Tensor*>& inputs) {
  ops::ForwardContext ctx(inputs, 1, false, &rng_, info_.get());
  kernel_->Forward(ctx);
  return std::move(ctx.take_outputs()[0]);
}

}  // namespace autodist::exec
