// Row-sparse gradients: by default ApplySparse must give bit for bit what Apply gives on the
// densified gradient (PyTorch's semantics), whether an optimizer densifies or takes its row-wise
// shortcut; with lazy_sparse, only the rows present change.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/optim/optimizer.h"
#include "runtime/tensor/sparse_gradient.h"
#include "tests/optim/optim_test_util.h"
#include "tests/optim/reference_data.h"

namespace autodist::optim::testing {
namespace {

using ::autodist::optim::testing::ErrorOf;
using ::testing::HasSubstr;
using Options = std::map<std::string, std::string>;

constexpr int64_t kRows = 8;
constexpr int64_t kCols = 5;

std::vector<float> RandomValues(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> normal(0.0F, 1.0F);
  std::vector<float> out(static_cast<size_t>(n));
  for (float& v : out) v = normal(rng);
  return out;
}

// Row sets of six steps: a few rows, none, all, one, the first and the last.
const std::vector<std::vector<int64_t>> kRowSets{{1, 4, 6}, {},     {0, 1, 2, 3, 4, 5, 6, 7},
                                                 {3},       {0, 7}, {2, 3, 4}};

// A sparse gradient with `rows` of random values.
tensor::SparseGradient RandomSparse(std::mt19937& rng, const std::vector<int64_t>& rows) {
  std::vector<float> dense(static_cast<size_t>(kRows * kCols), 0.0F);
  const std::vector<float> values = RandomValues(rng, kRows * kCols);
  for (const int64_t r : rows) {
    std::copy(values.begin() + r * kCols, values.begin() + (r + 1) * kCols,
              dense.begin() + r * kCols);
  }
  return SparseFromRows(rows, dense, {kRows, kCols});
}

bool BitIdentical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

struct SparseCase {
  std::string name;
  Options options;
};

class DenseEquivalentTest : public ::testing::TestWithParam<SparseCase> {};

TEST_P(DenseEquivalentTest, ApplySparseEqualsApplyOnTheDensifiedGradient) {
  const SparseCase& c = GetParam();
  const auto sparse = MakeOptimizer(ParseOptimizerOptions(c.name, c.options));
  const auto dense = MakeOptimizer(ParseOptimizerOptions(c.name, c.options));
  std::mt19937 rng(7);
  Tensor p_sparse = Tensor::FromVector<float>({kRows, kCols}, RandomValues(rng, kRows * kCols));
  Tensor p_dense = p_sparse.Clone();
  for (size_t step = 0; step < kRowSets.size(); ++step) {
    const tensor::SparseGradient grad = RandomSparse(rng, kRowSets[step]);
    sparse->ApplySparse("emb", p_sparse, grad);
    dense->Apply("emb", p_dense, tensor::Densify(grad));
    ASSERT_TRUE(BitIdentical(p_sparse, p_dense)) << "after step " << step + 1;
  }
  const auto sparse_state = sparse->SaveState();
  const auto dense_state = dense->SaveState();
  ASSERT_EQ(sparse_state.size(), dense_state.size());
  for (const auto& [key, value] : dense_state) {
    ASSERT_TRUE(sparse_state.contains(key)) << key;
    EXPECT_TRUE(BitIdentical(sparse_state.at(key), value)) << key;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllOptimizers, DenseEquivalentTest,
    ::testing::Values(
        // Row-wise shortcuts: SGD without momentum/decay, Adagrad without decay.
        SparseCase{"sgd", {{"lr", "0.1"}}}, SparseCase{"adagrad", {{"lr", "0.1"}}},
        SparseCase{"adagrad",
                   {{"lr", "0.1"},
                    {"lr_decay", "0.1"},
                    {"eps", "0"},
                    {"initial_accumulator_value", "0.5"}}},
        // Densified: state decays (or decay applies) on absent rows.
        SparseCase{"sgd", {{"lr", "0.1"}, {"weight_decay", "0.1"}}},
        SparseCase{"sgd", {{"lr", "0.1"}, {"momentum", "0.9"}, {"nesterov", "true"}}},
        SparseCase{"adam", {{"lr", "0.01"}}},
        SparseCase{"adam", {{"lr", "0.01"}, {"amsgrad", "true"}, {"weight_decay", "0.1"}}},
        SparseCase{"adamw", {{"lr", "0.01"}}},
        SparseCase{"adagrad", {{"lr", "0.1"}, {"weight_decay", "0.1"}}},
        SparseCase{"rmsprop", {{"lr", "0.01"}}},
        SparseCase{"rmsprop", {{"lr", "0.01"}, {"centered", "true"}, {"momentum", "0.5"}}}),
    [](const ::testing::TestParamInfo<SparseCase>& param_info) {
      return param_info.param.name + std::to_string(param_info.index);
    });

TEST(SparseTest, AdagradWithoutEpsKeepsTorchsNanOnNeverSeenRows) {
  // eps = 0 and a zero initial sum: the dense update divides 0 by 0 on rows that never had a
  // gradient. The row-wise shortcut would skip them, so it must not be taken here.
  const Options options{{"lr", "0.1"}, {"eps", "0"}};
  const auto sparse = MakeOptimizer(ParseOptimizerOptions("adagrad", options));
  const auto dense = MakeOptimizer(ParseOptimizerOptions("adagrad", options));
  std::mt19937 rng(3);
  Tensor p_sparse = Tensor::FromVector<float>({kRows, kCols}, RandomValues(rng, kRows * kCols));
  Tensor p_dense = p_sparse.Clone();
  const tensor::SparseGradient grad = RandomSparse(rng, {2, 5});
  sparse->ApplySparse("emb", p_sparse, grad);
  dense->Apply("emb", p_dense, tensor::Densify(grad));
  EXPECT_TRUE(std::isnan(p_dense.data<float>()[0]));
  EXPECT_TRUE(BitIdentical(p_sparse, p_dense));
}

class LazyTest : public ::testing::TestWithParam<SparseCase> {};

TEST_P(LazyTest, OnlyPresentRowsChangeAndTheyFollowTheDenseRule) {
  // Rows 1 and 4 get gradients every step, the others never: the lazy update of rows {1, 4}
  // must equal the ordinary (dense) update of a [2, 5] variable made of those rows, and the
  // other rows and their state must not change at all.
  const SparseCase& c = GetParam();
  Options lazy_options = c.options;
  lazy_options["lazy_sparse"] = "true";
  const auto lazy = MakeOptimizer(ParseOptimizerOptions(c.name, lazy_options));
  const auto rows_only = MakeOptimizer(ParseOptimizerOptions(c.name, c.options));
  std::mt19937 rng(11);
  const std::vector<float> start = RandomValues(rng, kRows * kCols);
  Tensor p_lazy = Tensor::FromVector<float>({kRows, kCols}, start);
  std::vector<float> sub_start(start.begin() + 1 * kCols, start.begin() + 2 * kCols);
  sub_start.insert(sub_start.end(), start.begin() + 4 * kCols, start.begin() + 5 * kCols);
  Tensor p_rows = Tensor::FromVector<float>({2, kCols}, sub_start);
  std::map<std::string, Tensor> first_state;
  for (int step = 0; step < 5; ++step) {
    const tensor::SparseGradient grad = RandomSparse(rng, {1, 4});
    lazy->ApplySparse("emb", p_lazy, grad);
    rows_only->Apply("emb", p_rows, grad.values);
    if (step == 0) first_state = lazy->SaveState();
  }
  const float* lazy_values = p_lazy.data<float>();
  const float* row_values = p_rows.data<float>();
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t k = 0; k < kCols; ++k) {
      const float actual = lazy_values[r * kCols + k];
      if (r == 1 || r == 4) {
        EXPECT_EQ(actual, row_values[(r == 1 ? 0 : 1) * kCols + k]) << "row " << r;
      } else {
        EXPECT_EQ(actual, start[static_cast<size_t>(r * kCols + k)]) << "row " << r;
      }
    }
  }
  // Absent rows of every state buffer are as the first step left them (zero, or Adagrad's
  // initial sum).
  for (const auto& [key, value] : lazy->SaveState()) {
    if (value.rank() != 2) continue;
    const auto* now = value.data<float>();
    const auto* then = first_state.at(key).data<float>();
    for (const int64_t r : {0, 2, 3, 5, 6, 7}) {
      for (int64_t k = 0; k < kCols; ++k) EXPECT_EQ(now[r * kCols + k], then[r * kCols + k]) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    StatefulOptimizers, LazyTest,
    ::testing::Values(
        SparseCase{"sgd", {{"lr", "0.1"}, {"momentum", "0.9"}, {"weight_decay", "0.01"}}},
        SparseCase{"adam", {{"lr", "0.01"}, {"amsgrad", "true"}, {"weight_decay", "0.1"}}},
        SparseCase{"adamw", {{"lr", "0.01"}}},
        SparseCase{"adagrad", {{"lr", "0.1"}, {"weight_decay", "0.1"}}},
        SparseCase{"rmsprop", {{"lr", "0.01"}, {"centered", "true"}, {"momentum", "0.5"}}}),
    [](const ::testing::TestParamInfo<SparseCase>& param_info) {
      return param_info.param.name + std::to_string(param_info.index);
    });

TEST(SparseTest, LazyAdamCorrectsBiasWithTheVariablesStepCount) {
  // As torch.optim.SparseAdam: the step count is the variable's, so a row first seen at step 2
  // is corrected with t = 2: p -= lr * (0.1 g / (1 - 0.9^2)) / (sqrt(0.001 g^2 / (1 - 0.999^2))).
  const auto adam =
      MakeOptimizer(ParseOptimizerOptions("adam", {{"lr", "0.01"}, {"lazy_sparse", "true"}}));
  Tensor p = Tensor::FromVector<float>({2, 1}, {1, 1});
  adam->ApplySparse("emb", p, SparseFromRows({0}, {2, 0}, {2, 1}));
  adam->ApplySparse("emb", p, SparseFromRows({1}, {0, 2}, {2, 1}));
  EXPECT_NEAR(p.data<float>()[0], 0.99, 1e-6);  // row 0: its first step only
  const double m_hat = 0.1 * 2 / (1 - 0.81);
  const double v_hat = 0.001 * 4 / (1 - 0.999 * 0.999);
  EXPECT_NEAR(p.data<float>()[1], 1 - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8), 1e-6);
}

TEST(SparseTest, LazySgdMomentumStartsNewRowsFromZero) {
  // The momentum buffer is created on the variable's first step (rows present then start from
  // their gradient, as in torch); a row first seen later starts from a zero buffer:
  // buf = 0.9 * 0 + (1 - 0.5) * g.
  const auto sgd = MakeOptimizer(ParseOptimizerOptions(
      "sgd", {{"lr", "1"}, {"momentum", "0.9"}, {"dampening", "0.5"}, {"lazy_sparse", "true"}}));
  Tensor p = Tensor::FromVector<float>({2, 1}, {0, 0});
  sgd->ApplySparse("emb", p, SparseFromRows({0}, {1, 0}, {2, 1}));
  sgd->ApplySparse("emb", p, SparseFromRows({1}, {0, 1}, {2, 1}));
  EXPECT_EQ(p.data<float>()[0], -1.0F);
  EXPECT_EQ(p.data<float>()[1], -0.5F);
}

TEST(SparseTest, TableWithoutRowsTakesAnEmptyGradient) {
  for (const std::string lazy : {"false", "true"}) {
    for (const std::string name : {"sgd", "adam", "adagrad", "rmsprop"}) {
      SCOPED_TRACE(::testing::Message() << name << " lazy_sparse=" << lazy);
      const auto optimizer = MakeOptimizer(ParseOptimizerOptions(
          name, {{"lr", "0.1"}, {"weight_decay", "0.1"}, {"lazy_sparse", lazy}}));
      Tensor p = Tensor::Zeros(tensor::DType::kFloat32, {0, 3});
      optimizer->ApplySparse("emb", p, SparseFromRows({}, {}, {0, 3}));
      EXPECT_EQ(p.numel(), 0);
    }
  }
}

TEST(SparseTest, MalformedSparseGradientsAreRejected) {
  for (const std::string name : {"sgd", "adam", "adagrad"}) {
    SCOPED_TRACE(name);
    Options options{{"lr", "0.1"}};
    const auto optimizer = MakeOptimizer(ParseOptimizerOptions(name, options));
    Tensor p = Tensor::Zeros(tensor::DType::kFloat32, {4, 2});
    const std::vector<float> values(8, 1.0F);
    tensor::SparseGradient unsorted = SparseFromRows({2, 1}, values, {4, 2});
    EXPECT_THAT(
        ErrorOf([&] { optimizer->ApplySparse("emb", p, unsorted); }),
        HasSubstr("sparse gradient of 'emb' must have unique ascending rows, got 1 after 2"));
    tensor::SparseGradient repeated = SparseFromRows({1, 1}, values, {4, 2});
    EXPECT_THAT(ErrorOf([&] { optimizer->ApplySparse("emb", p, repeated); }),
                HasSubstr("unique ascending rows"));
    tensor::SparseGradient outside = SparseFromRows({0}, values, {4, 2});
    outside.indices.data<int64_t>()[0] = 4;
    EXPECT_THAT(ErrorOf([&] { optimizer->ApplySparse("emb", p, outside); }),
                HasSubstr("sparse gradient of 'emb' has row 4 outside [0, 4)"));
    tensor::SparseGradient other_shape = SparseFromRows({0}, values, {4, 2});
    other_shape.dense_shape = {5, 2};
    EXPECT_THAT(ErrorOf([&] { optimizer->ApplySparse("emb", p, other_shape); }),
                HasSubstr("sparse gradient of 'emb' is for shape [5, 2], the variable has [4, 2]"));
    tensor::SparseGradient short_rows = SparseFromRows({0, 1}, values, {4, 2});
    short_rows.values = Tensor::Zeros(tensor::DType::kFloat32, {2, 3});
    EXPECT_THAT(ErrorOf([&] { optimizer->ApplySparse("emb", p, short_rows); }),
                HasSubstr("needs float32 [2, 2] rows, got float32 [2, 3]"));
    tensor::SparseGradient int32_rows = SparseFromRows({0}, values, {4, 2});
    int32_rows.indices = Tensor::FromVector<int32_t>({1}, {0});
    EXPECT_THAT(ErrorOf([&] { optimizer->ApplySparse("emb", p, int32_rows); }),
                HasSubstr("needs int64 [n] row indices, got int32 [1]"));
    // Nothing was applied by the rejected calls.
    for (int64_t i = 0; i < p.numel(); ++i) EXPECT_EQ(p.data<float>()[i], 0.0F);
  }
}

}  // namespace
}  // namespace autodist::optim::testing
