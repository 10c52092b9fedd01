// The GPUs this process can use, and the check that a job's request for GPUs can be met. Asking
// for a GPU where there is none is an error that names the field and what was found, never a
// silent CPU run.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace autodist::gpu {

struct GpuInfo {
  int index = 0;
  std::string name;        // "NVIDIA H100 80GB HBM3"
  size_t total_bytes = 0;  // device memory
  int compute_major = 0;   // 9 for Hopper
  int compute_minor = 0;
  int multiprocessors = 0;
};

struct GpuInventory {
  std::vector<GpuInfo> gpus;
  // Why there are none, when there are none: "no CUDA driver (cudaErrorInsufficientDriver: ...)",
  // "no CUDA device (cudaErrorNoDevice: ...)", with CUDA_VISIBLE_DEVICES when it is set.
  std::string why_none;
};

// Asks the CUDA runtime. Never throws for a missing driver or device: that is an answer.
GpuInventory DiscoverGpus();

// Throws kFailedPrecondition unless the process sees at least `wanted` GPUs:
//   "resources.gpusPerWorker: 4 GPUs asked for, but this machine has 1 (NVIDIA H100 80GB HBM3)"
//   "--device cuda: 1 GPU asked for, but this machine has none: no CUDA driver (...)"
// `field` names what asked (a manifest field or a flag). Returns what it found.
GpuInventory RequireGpus(std::string_view field, int wanted);

// GPU `index`'s PCI bus id ("0000:3B:00.0"): the same GPU has the same id in every process of
// the machine, whatever CUDA_VISIBLE_DEVICES numbers it. Throws kFailedPrecondition for an index
// the process does not see.
std::string PciBusId(int index);

// "4 GPUs: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB), ...", for logs.
std::string DescribeGpus(const GpuInventory& inventory);

}  // namespace autodist::gpu
