// Which GPUs each GPU worker of `autodist run` sees. On one machine every worker process would
// otherwise take its first visible GPU, all the same one; a pod on a cluster sees only the GPUs
// the device plugin gave it, which `autodist run` imitates through CUDA_VISIBLE_DEVICES.
#pragma once

#include <string>
#include <vector>

namespace autodist::launcher {

// The GPUs this process may hand out: the entries of `cuda_visible_devices` (the caller's
// CUDA_VISIBLE_DEVICES; null when unset) when it is set, else one per directory of
// `driver_dir`, where the NVIDIA driver lists each GPU of the machine, numbered from 0. Empty
// when neither names any.
std::vector<std::string> VisibleGpus(const char* cuda_visible_devices,
                                     const std::string& driver_dir = "/proc/driver/nvidia/gpus");

// CUDA_VISIBLE_DEVICES of the worker of rank `rank` with `per_worker` GPUs: workers take the
// visible GPUs in turn, wrapping around (so sharing them) when the job asks for more GPUs than
// there are. Empty when `visible` is: the worker's own check then names what is missing.
std::string WorkerVisibleDevices(int rank, int per_worker, const std::vector<std::string>& visible);

}  // namespace autodist::launcher
