#include "runtime/exec/finite_check.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <string>
#include <utility>

#include "runtime/ops/kernel.h"
#include "runtime/ops/node_info.h"
#include "runtime/ops/registry.h"

namespace autodist::exec {

// Opset 13: ReduceSum without axes reduces every axis.
constexpr int64_t kOpset = 13;

struct DeviceFiniteCheck::Kernel {
  onnx::NodeProto proto;
  std::unique_ptr<ops::NodeInfo> info;
  std::unique_ptr<ops::OpKernel> kernel;

  Kernel(const std::string& op_type, const tensor::Device& device, bool keepdims) {
    proto.set_op_type(op_type);
    proto.set_name("finiteness check");
    if (!keepdims) {
      onnx::AttributeProto* attribute = proto.add_attribute();
      attribute->set_name("keepdims");
      attribute->set_type(onnx::AttributeProto::INT);
      attribute->set_i(0);
    }
    info = std::make_unique<ops::NodeInfo>(proto, kOpset, ops::Precision::kFp32, device);
    kernel = ops::KernelRegistry::Global().Create(*info, device.kind);
  }
};

bool GradientFiniteOnHost(const Gradient& gradient) {
  const Tensor t =
      (gradient.is_sparse() ? gradient.sparse->values : gradient.dense).To(tensor::Device::Cpu());
  const auto* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(data[i])) return false;
  }
  return true;
}

DeviceFiniteCheck::DeviceFiniteCheck(const tensor::Device& device)
    : device_(device),
      multiply_(std::make_unique<Kernel>("Mul", device, true)),
      reduce_(std::make_unique<Kernel>("ReduceSum", device, false)),
      add_(std::make_unique<Kernel>("Add", device, true)),
      zero_(Tensor::Scalar(0.0F).To(device)) {}

DeviceFiniteCheck::~DeviceFiniteCheck() = default;

Tensor DeviceFiniteCheck::Run(Kernel& kernel, const Tensor& a, const Tensor& b) {
  std::vector<const Tensor*> inputs{&a};
  if (b.defined()) inputs.push_back(&b);
  ops::ForwardContext ctx(std::move(inputs), 1, false, &rng_, kernel.info.get());
  kernel.kernel->Forward(ctx);
  return std::move(ctx.take_outputs()[0]);
}

void DeviceFiniteCheck::Add(const Gradient& gradient) {
  const Tensor& values = gradient.is_sparse() ? gradient.sparse->values : gradient.dense;
  if (values.numel() == 0) return;
  // g * 0 is 0 for a finite g and NaN for an infinite or NaN one; their sum cannot overflow.
  const Tensor poison = Run(*reduce_, Run(*multiply_, values, zero_), Tensor());
  total_ = total_.defined() ? Run(*add_, total_, poison) : poison;
}

bool DeviceFiniteCheck::TakeAllFinite() {
  if (!total_.defined()) return true;
  const double total = total_.To(tensor::Device::Cpu()).GetAsDouble(0);
  total_ = Tensor();
  return std::isfinite(total);
}

}  // namespace autodist::exec
