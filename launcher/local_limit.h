// How many member processes `autodist run` may start on this machine: a manifest asking for
// `workers: 100000` is refused before anything starts, instead of forking until the kernel's
// OOM killer steps in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace autodist::cli {

struct LocalProcessLimit {
  int processes = 1;  // the most member processes at once
  int cores = 1;
  std::optional<int64_t> available_bytes;  // MemAvailable; nullopt when unknown

  // "32 (16 per core on 2 cores; one per 64 MiB of 3.1 GiB available memory)".
  std::string Describe() const;
};

inline constexpr int kProcessesPerCore = 16;
inline constexpr int64_t kBytesPerProcess = int64_t{64} << 20;

// This machine's limit: kProcessesPerCore per core, and no more than one per kBytesPerProcess
// of available memory (/proc/meminfo's MemAvailable, when it can be read); at least 1.
LocalProcessLimit MachineProcessLimit();

// The limit for `cores` and `available_bytes`, as MachineProcessLimit computes it.
LocalProcessLimit ProcessLimitFor(int cores, std::optional<int64_t> available_bytes);

// Throws autodist::Error (kInvalidArgument) naming `manifest`'s spec.resources, the count and
// the limit when `workers` + `parameter_servers` processes pass it. `allowed` > 0 replaces the
// machine's limit (`autodist run --max-processes`).
void CheckLocalProcessCount(const std::string& manifest, int workers, int parameter_servers,
                            int allowed, const LocalProcessLimit& machine);

}  // namespace autodist::cli
