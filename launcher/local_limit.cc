#include "launcher/local_limit.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/common/error.h"
#include "runtime/strategy/summary.h"

namespace autodist::cli {
namespace {

// MemAvailable of /proc/meminfo ("MemAvailable:   3212345 kB"), in bytes.
std::optional<int64_t> AvailableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kilobytes = 0;
    std::string unit;
    if (fields >> kilobytes >> unit && unit == "kB" && kilobytes > 0) return kilobytes * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::string LocalProcessLimit::Describe() const {
  std::string text = fmt::format("{} ({} per core on {} core{}", processes, kProcessesPerCore,
                                 cores, cores == 1 ? "" : "s");
  if (available_bytes.has_value()) {
    text +=
        fmt::format("; one per {} of {} available memory", strategy::FormatBytes(kBytesPerProcess),
                    strategy::FormatBytes(*available_bytes));
  }
  return text + ")";
}

LocalProcessLimit ProcessLimitFor(int cores, std::optional<int64_t> available_bytes) {
  LocalProcessLimit limit;
  limit.cores = std::max(1, cores);
  limit.available_bytes = available_bytes;
  int64_t processes = int64_t{limit.cores} * kProcessesPerCore;
  if (available_bytes.has_value()) {
    processes = std::min(processes, *available_bytes / kBytesPerProcess);
  }
  limit.processes = static_cast<int>(std::max<int64_t>(1, processes));
  return limit;
}

LocalProcessLimit MachineProcessLimit() {
  return ProcessLimitFor(static_cast<int>(std::thread::hardware_concurrency()), AvailableMemory());
}

void CheckLocalProcessCount(const std::string& manifest, int workers, int parameter_servers,
                            int allowed, const LocalProcessLimit& machine) {
  const int64_t processes = int64_t{workers} + parameter_servers;
  const std::string members =
      fmt::format("{} worker{}, {} parameter server{}", workers, workers == 1 ? "" : "s",
                  parameter_servers, parameter_servers == 1 ? "" : "s");
  if (allowed > 0) {
    AD_CHECK(processes <= allowed, kInvalidArgument,
             "{}: spec.resources: the job would start {} local processes ({}), more than "
             "--max-processes {} allows",
             manifest, processes, members, allowed);
    return;
  }
  AD_CHECK(processes <= machine.processes, kInvalidArgument,
           "{}: spec.resources: the job would start {} local processes ({}), more than this "
           "machine holds: {}; give --max-processes N to allow more",
           manifest, processes, members, machine.Describe());
}

}  // namespace autodist::cli
