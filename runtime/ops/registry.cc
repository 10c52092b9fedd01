#include "runtime/ops/registry.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::ops {

KernelRegistry& KernelRegistry::Global() {
  static auto* registry = new KernelRegistry();
  return *registry;
}

void KernelRegistry::Register(const std::string& op_type, int since, int until,
                              KernelFactory factory) {
  auto& entries = entries_[op_type];
  for (const Entry& entry : entries) {
    AD_CHECK(until < entry.since || since > entry.until, kInternal,
             "kernel for {} opsets {}..{} overlaps an existing one ({}..{})", op_type, since, until,
             entry.since, entry.until);
  }
  entries.push_back(Entry{since, until, std::move(factory)});
}

std::unique_ptr<OpKernel> KernelRegistry::Create(const NodeInfo& node) const {
  const auto it = entries_.find(node.op_type());
  if (it != entries_.end()) {
    for (const Entry& entry : it->second) {
      if (node.opset() >= entry.since && node.opset() <= entry.until) return entry.factory(node);
    }
    Fail(ErrorCode::kInvalidArgument, "{}: op {} is supported only for other opsets",
         node.Describe(), node.op_type());
  }
  Fail(ErrorCode::kInvalidArgument, "{}: unsupported op type '{}'", node.Describe(),
       node.op_type());
}

bool KernelRegistry::Supports(const std::string& op_type, int64_t opset) const {
  const auto it = entries_.find(op_type);
  if (it == entries_.end()) return false;
  for (const Entry& entry : it->second) {
    if (opset >= entry.since && opset <= entry.until) return true;
  }
  return false;
}

std::vector<std::string> KernelRegistry::OpTypes() const {
  std::vector<std::string> out;
  for (const auto& [op_type, entries] : entries_) out.push_back(op_type);
  return out;
}

namespace detail {
bool RegisterKernel(const char* op_type, int since, int until, KernelFactory factory) {
  KernelRegistry::Global().Register(op_type, since, until, std::move(factory));
  return true;
}
}  // namespace detail

}  // namespace autodist::ops
