#include "runtime/ops/registry.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::ops {

KernelRegistry& KernelRegistry::Global() {
  static auto* registry = new KernelRegistry();
  return *registry;
}

namespace {

// "" on the CPU (the messages users know), " on cuda" elsewhere.
std::string OnBackend(tensor::DeviceKind backend) {
  return backend == tensor::DeviceKind::kCpu
             ? std::string()
             : fmt::format(" on {}", tensor::DeviceKindName(backend));
}

}  // namespace

void KernelRegistry::Register(const std::string& op_type, int since, int until,
                              KernelFactory factory, tensor::DeviceKind backend) {
  auto& entries = tables_[backend][op_type];
  for (const Entry& entry : entries) {
    AD_CHECK(until < entry.since || since > entry.until, kInternal,
             "kernel for {}{} opsets {}..{} overlaps an existing one ({}..{})", op_type,
             OnBackend(backend), since, until, entry.since, entry.until);
  }
  entries.push_back(Entry{since, until, std::move(factory)});
}

const KernelRegistry::Table& KernelRegistry::TableOf(tensor::DeviceKind backend) const {
  static const Table kEmpty;
  const auto it = tables_.find(backend);
  return it == tables_.end() ? kEmpty : it->second;
}

std::unique_ptr<OpKernel> KernelRegistry::Create(const NodeInfo& node,
                                                 tensor::DeviceKind backend) const {
  const Table& table = TableOf(backend);
  const auto it = table.find(node.op_type());
  if (it != table.end()) {
    for (const Entry& entry : it->second) {
      if (node.opset() >= entry.since && node.opset() <= entry.until) return entry.factory(node);
    }
    Fail(ErrorCode::kInvalidArgument, "{}: op {}{} is supported only for other opsets",
         node.Describe(), node.op_type(), OnBackend(backend));
  }
  Fail(ErrorCode::kInvalidArgument, "{}: unsupported op type '{}'{}", node.Describe(),
       node.op_type(), OnBackend(backend));
}

bool KernelRegistry::Supports(const std::string& op_type, int64_t opset,
                              tensor::DeviceKind backend) const {
  const Table& table = TableOf(backend);
  const auto it = table.find(op_type);
  if (it == table.end()) return false;
  for (const Entry& entry : it->second) {
    if (opset >= entry.since && opset <= entry.until) return true;
  }
  return false;
}

std::vector<std::string> KernelRegistry::OpTypes(tensor::DeviceKind backend) const {
  std::vector<std::string> out;
  for (const auto& [op_type, entries] : TableOf(backend)) out.push_back(op_type);
  return out;
}

namespace detail {
bool RegisterKernel(const char* op_type, int since, int until, KernelFactory factory,
                    tensor::DeviceKind backend) {
  KernelRegistry::Global().Register(op_type, since, until, std::move(factory), backend);
  return true;
}
}  // namespace detail

}  // namespace autodist::ops
