// The CUDA backend's installer (runtime/exec/device_backend.h), registered when a program links
// autodist_gpu_backend: a program asking for GPUs gets RequireGpus' check, naming the flag or
// field that asked, then tensors and fused optimizers on the GPUs. It also registers how GPUs are
// told apart (their PCI bus ids), the compressors of the all-reduce on the GPUs (the Horovod
// pair, PowerSGD, TopK) and the encoders of compressed parameter-server pushes (the Horovod pair,
// TopK).
#include "gpu/compress/half_flat_compressor.h"
#include "gpu/compress/powersgd_flat_compressor.h"
#include "gpu/compress/push_streams.h"
#include "gpu/compress/topk_flat_compressor.h"
#include "gpu/device/devices.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "gpu/optim/cuda_optimizer.h"
#include "runtime/exec/device_backend.h"

namespace autodist::gpu {
namespace {

const bool kRegistered = [] {
  exec::RegisterDeviceBackend(tensor::DeviceKind::kCuda, [](int count, std::string_view field) {
    const GpuInventory inventory = RequireGpus(field, count);
    InstallCudaTensorMemory();
    InstallCudaOptimizers();
    return DescribeGpus(inventory);
  });
  exec::RegisterDeviceIdentifier(tensor::DeviceKind::kCuda, PciBusId);
  HalfFlatCompressor::Register();
  PowerSGDFlatCompressor::Register();
  TopKFlatCompressor::Register();
  RegisterPushStreams();
  return true;
}();

}  // namespace
}  // namespace autodist::gpu
