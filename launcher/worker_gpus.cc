#include "launcher/worker_gpus.h"

#include <filesystem>
#include <sstream>

namespace autodist::launcher {

std::vector<std::string> VisibleGpus(const char* cuda_visible_devices,
                                     const std::string& driver_dir) {
  std::vector<std::string> gpus;
  if (cuda_visible_devices != nullptr) {
    std::istringstream list(cuda_visible_devices);
    std::string entry;
    while (std::getline(list, entry, ',')) {
      if (!entry.empty()) gpus.push_back(entry);
    }
    return gpus;
  }
  std::error_code error;
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(driver_dir, error)) {
    if (entry.is_directory(error)) ++count;
  }
  for (int g = 0; g < count; ++g) gpus.push_back(std::to_string(g));
  return gpus;
}

std::string WorkerVisibleDevices(int rank, int per_worker,
                                 const std::vector<std::string>& visible) {
  if (visible.empty()) return "";
  std::string devices;
  if (static_cast<size_t>(per_worker) >= visible.size()) {
    // A GPU twice in CUDA_VISIBLE_DEVICES is an error to CUDA: all of them, and the worker's
    // check says how many it asked for.
    for (const std::string& gpu : visible) devices += (devices.empty() ? "" : ",") + gpu;
    return devices;
  }
  for (int g = 0; g < per_worker; ++g) {
    const size_t index = static_cast<size_t>(rank * per_worker + g) % visible.size();
    devices += (g == 0 ? "" : ",") + visible[index];
  }
  return devices;
}

}  // namespace autodist::launcher
