// The preflight's kernel catalogue (runtime/graph/kernel_catalog.cc) against the CPU kernels
// that registered themselves; tests/gpu/op_parity_test.cc checks the CUDA ones.
#include <gtest/gtest.h>

#include "tests/ops/kernel_catalog_check.h"

namespace autodist::testing {
namespace {

TEST(KernelCatalogTest, CpuCatalogueListsExactlyTheRegisteredCpuKernels) {
  EXPECT_EQ(CatalogDifferences(graph::Backend::kCpu, tensor::DeviceKind::kCpu), "");
}

TEST(KernelCatalogTest, CheckFindsAnOpsetTheCatalogueGetsWrong) {
  // The check itself must be able to fail: Gemm runs from opset 11 on the CPU, so a catalogue
  // claiming opset 9 would differ there. Shown on CatalogRuns, the predicate it compares with.
  const graph::KernelTable& table = graph::KernelCatalog(graph::Backend::kCpu);
  EXPECT_TRUE(CatalogRuns(table, "Gemm", 11));
  EXPECT_FALSE(CatalogRuns(table, "Gemm", 9));
  EXPECT_FALSE(ops::KernelRegistry::Global().Supports("Gemm", 9, tensor::DeviceKind::kCpu));
  EXPECT_FALSE(CatalogRuns(table, "LSTM", 14));
}

}  // namespace
}  // namespace autodist::testing
