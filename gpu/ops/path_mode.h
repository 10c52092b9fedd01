// Internal: the environment variables that pin a kernel's measured choice between its paths
// (AUTODIST_CONV_PATH in conv_path.h, AUTODIST_POOL_PATH in pool_path.h). Each mode enum lists
// its names once, in a table, so that parsing, naming and the error's list of accepted values
// cannot drift apart. Plain C++: testable without a GPU.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::gpu::detail {

template <typename Mode, size_t N>
using PathModeNames = std::array<std::pair<Mode, std::string_view>, N>;

// The mode `text` names; null or empty text is `names[0]` (the measured default). Throws
// InvalidArgument naming `variable` and every accepted value otherwise.
template <typename Mode, size_t N>
Mode ParsePathMode(const char* variable, const char* text, const PathModeNames<Mode, N>& names) {
  const std::string_view value(text == nullptr ? "" : text);
  if (value.empty()) return names[0].first;
  std::string accepted;
  for (const auto& [mode, name] : names) {
    if (value == name) return mode;
    accepted += accepted.empty() ? "" : ", ";
    accepted += name;
  }
  Fail(ErrorCode::kInvalidArgument, "environment variable {}: expected one of {}, got '{}'",
       variable, accepted, value);
}

template <typename Mode, size_t N>
std::string_view PathModeName(Mode mode, const PathModeNames<Mode, N>& names) {
  for (const auto& [candidate, name] : names) {
    if (candidate == mode) return name;
  }
  return names[0].second;
}

}  // namespace autodist::gpu::detail
