// Which ONNX ops each backend has kernels for, as data: the operator and the CLI check a model
// against it before anything starts (op_support.h), without linking the kernels themselves (the
// operator has no CUDA). The kernels register themselves in runtime/ops and gpu/ops; a test per
// backend (tests/ops/kernel_catalog_test.cc, tests/gpu/op_parity_test.cc) fails when this table
// and those registrations differ, and prints the table to paste here.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace autodist::graph {

// The backend a job's workers run the model on: the CPU kernels, or the CUDA ones when the job
// gives its workers GPUs.
enum class Backend { kCpu, kCuda };

// "cpu", "cuda": tensor::DeviceKindName's names.
std::string_view BackendName(Backend backend);

// Opsets [since, until] of the default ONNX domain that one kernel serves.
struct OpsetRange {
  int since = 0;
  int until = 0;

  bool operator==(const OpsetRange&) const = default;
};

// Op type -> the opset ranges the backend's kernels serve, sorted by op type.
using KernelTable = std::map<std::string, std::vector<OpsetRange>>;

const KernelTable& KernelCatalog(Backend backend);

}  // namespace autodist::graph
