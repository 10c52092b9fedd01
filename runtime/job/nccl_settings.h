// NCCL's settings for a job's processes: which interfaces its sockets use, how much it logs and
// whether it may use InfiniBand. The manifest may set them (spec.resources.nccl), the operator
// has its own defaults for pods (the chart's nccl values), and both become the environment
// variables NCCL reads at start, so the same checks apply to both.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace autodist::job {

struct NcclSpec {
  // NCCL_SOCKET_IFNAME: interface name prefixes, comma-separated; "^" excludes, "=" matches
  // exactly ("eth0", "^docker,lo", "=ib0"). Empty: not set.
  std::string socket_ifname;
  std::string debug;               // NCCL_DEBUG: VERSION, WARN, INFO or TRACE; empty: not set
  std::optional<bool> ib_disable;  // NCCL_IB_DISABLE: true keeps NCCL on sockets

  bool operator==(const NcclSpec&) const = default;
};

// Letters, digits and _ . - : (interface names and aliases), separated by commas, each with an
// optional "^" or "=" in front of the whole list as NCCL reads it.
bool IsNcclSocketIfname(const std::string& text);

// One of VERSION, WARN, INFO, TRACE.
bool IsNcclDebugLevel(const std::string& text);

// What a setting that fails the checks above should have been, for error messages.
inline constexpr const char* kNcclSocketIfnameExpected =
    R"(interface name prefixes separated by commas, optionally led by "^" (exclude) or "=" )"
    R"((exact), e.g. "eth0", "^docker,lo")";
inline constexpr const char* kNcclDebugExpected = "one of VERSION, WARN, INFO, TRACE";

// The environment variables of `settings`, each field taken from `settings` where it is set and
// from `fallback` otherwise; fields set in neither are left out (NCCL's own defaults).
std::vector<std::pair<std::string, std::string>> NcclEnvironment(const NcclSpec& settings,
                                                                 const NcclSpec& fallback = {});

}  // namespace autodist::job
