// Compares graph::KernelCatalog (what the preflight believes) with the kernels that registered
// themselves (what the engine runs), opset by opset; tests/ops and tests/gpu run it per backend.
#pragma once

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "runtime/graph/kernel_catalog.h"
#include "runtime/graph/model_check.h"
#include "runtime/ops/registry.h"

namespace autodist::testing {

inline bool CatalogRuns(const graph::KernelTable& table, const std::string& op_type,
                        int64_t opset) {
  const auto it = table.find(op_type);
  if (it == table.end()) return false;
  for (const graph::OpsetRange& range : it->second) {
    if (opset >= range.since && opset <= range.until) return true;
  }
  return false;
}

// Empty when the two agree for every op type and opset 1..kMaxDefaultOpset; otherwise each
// difference, then the registry's table as runtime/graph/kernel_catalog.cc writes it.
inline std::string CatalogDifferences(graph::Backend backend, tensor::DeviceKind kind) {
  const ops::KernelRegistry& registry = ops::KernelRegistry::Global();
  const graph::KernelTable& table = graph::KernelCatalog(backend);
  std::set<std::string> op_types;
  for (const std::string& op_type : registry.OpTypes(kind)) op_types.insert(op_type);
  for (const auto& [op_type, ranges] : table) op_types.insert(op_type);
  std::string differences;
  std::string expected;
  for (const std::string& op_type : op_types) {
    std::vector<std::string> ranges;
    int64_t since = 0;
    for (int64_t opset = 1; opset <= graph::kMaxDefaultOpset + 1; ++opset) {
      const bool registered =
          opset <= graph::kMaxDefaultOpset && registry.Supports(op_type, opset, kind);
      if (opset <= graph::kMaxDefaultOpset && registered != CatalogRuns(table, op_type, opset)) {
        differences += fmt::format("{} opset {}: registered {}, catalogue {}\n", op_type, opset,
                                   registered, !registered);
      }
      if (registered && since == 0) since = opset;
      if (!registered && since != 0) {
        ranges.push_back(fmt::format("{{{}, {}}}", since, opset - 1));
        since = 0;
      }
    }
    if (!ranges.empty()) {
      expected += fmt::format("      {{\"{}\", {{{}}}}},\n", op_type, fmt::join(ranges, ", "));
    }
  }
  if (differences.empty()) return "";
  return differences + "the registered kernels, as kernel_catalog.cc lists them:\n" + expected;
}

}  // namespace autodist::testing
