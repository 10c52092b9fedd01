#include "gpu/device/devices.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>

#include "gpu/device/cuda_error.h"
#include "runtime/common/error.h"

namespace autodist::gpu {
namespace {

std::string WhyNone(cudaError_t status) {
  std::string why;
  if (status == cudaErrorInsufficientDriver) {
    why = "no usable CUDA driver";
  } else if (status == cudaErrorNoDevice || status == cudaSuccess) {
    why = "no CUDA device";
  } else {
    why = "the CUDA runtime failed";
  }
  if (status != cudaSuccess) {
    why += fmt::format(" ({}: {})", cudaGetErrorName(status), cudaGetErrorString(status));
    cudaGetLastError();
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible != nullptr) {
    why += fmt::format("; CUDA_VISIBLE_DEVICES is \"{}\"", visible);
  }
  return why;
}

std::string Plural(int n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

GpuInventory DiscoverGpus() {
  GpuInventory inventory;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    inventory.why_none = WhyNone(status);
    return inventory;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    CheckCuda(cudaGetDeviceProperties(&prop, i),
              fmt::format("reading the properties of GPU {}", i));
    inventory.gpus.push_back(GpuInfo{.index = i,
                                     .name = prop.name,
                                     .total_bytes = prop.totalGlobalMem,
                                     .compute_major = prop.major,
                                     .compute_minor = prop.minor,
                                     .multiprocessors = prop.multiProcessorCount});
  }
  return inventory;
}

GpuInventory RequireGpus(std::string_view field, int wanted) {
  AD_CHECK(wanted >= 1, kInvalidArgument, "{}: the number of GPUs must be at least 1, got {}",
           field, wanted);
  GpuInventory inventory = DiscoverGpus();
  const auto found = static_cast<int>(inventory.gpus.size());
  if (found == 0) {
    Fail(ErrorCode::kFailedPrecondition, "{}: {} asked for, but this machine has none: {}", field,
         Plural(wanted, "GPU"), inventory.why_none);
  }
  AD_CHECK(found >= wanted, kFailedPrecondition, "{}: {} asked for, but this machine has {}", field,
           Plural(wanted, "GPU"), DescribeGpus(inventory));
  return inventory;
}

std::string PciBusId(int index) {
  // "[domain]:[bus]:[device].[function]" fits in 13 characters; CUDA asks for room for more.
  char id[64] = {};
  CheckCuda(cudaDeviceGetPCIBusId(id, sizeof(id), index),
            fmt::format("reading the PCI bus id of GPU {}", index));
  return id;
}

std::string DescribeGpus(const GpuInventory& inventory) {
  if (inventory.gpus.empty()) return "no GPU: " + inventory.why_none;
  std::string out = Plural(static_cast<int>(inventory.gpus.size()), "GPU") + ":";
  for (const GpuInfo& gpu : inventory.gpus) {
    out += fmt::format("{} {} (sm_{}{}, {} SMs, {:.1f} GiB)", gpu.index == 0 ? "" : ",", gpu.name,
                       gpu.compute_major, gpu.compute_minor, gpu.multiprocessors,
                       static_cast<double>(gpu.total_bytes) / (1024.0 * 1024.0 * 1024.0));
  }
  return out;
}

}  // namespace autodist::gpu
