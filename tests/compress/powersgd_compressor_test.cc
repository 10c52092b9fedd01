// PowerSGDCompressor: exact for gradients of rank <= r, step by step equal to a double-precision
// reference of the documented formulas (with and without warm start), the same Q on every rank,
// uncompressed steps and tensors, a zero gradient, and bounded error feedback.
#include "runtime/compress/powersgd_compressor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <mutex>

#include "runtime/compress/powersgd_math.h"
#include "tests/compress/compress_test_util.h"
#include "tests/compress/thread_communicator.h"

namespace autodist::compress::testing {
namespace {

using Matrix = std::vector<double>;  // row-major

// a (rows x inner) times b (inner x cols), with either operand transposed as stored.
Matrix Multiply(const Matrix& a, bool trans_a, const Matrix& b, bool trans_b, int64_t rows,
                int64_t inner, int64_t cols) {
  Matrix out(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < inner; ++k) {
        sum += (trans_a ? a[k * rows + i] : a[i * inner + k]) *
               (trans_b ? b[j * inner + k] : b[k * cols + j]);
      }
      out[i * cols + j] = sum;
    }
  }
  return out;
}

// The formulas of powersgd_compressor.h in double precision, for one tensor on all ranks.
struct Reference {
  int64_t n, m, r;
  int world;
  std::vector<Matrix> residuals;  // per rank
  Matrix q;

  // Returns the sum approximation; `initial_q` is used when q is empty (or not warm-started).
  Matrix Step(const std::vector<std::vector<float>>& gradients, const std::vector<float>& initial_q,
              bool warm_start) {
    if (residuals.empty()) residuals.assign(world, Matrix(size_t(n * m), 0.0));
    if (q.empty() || !warm_start) q.assign(initial_q.begin(), initial_q.end());
    std::vector<Matrix> ms;
    Matrix p(size_t(n * r), 0.0);
    for (int w = 0; w < world; ++w) {
      Matrix mw(size_t(n * m));
      for (size_t i = 0; i < mw.size(); ++i) mw[i] = gradients[w][i] + residuals[w][i];
      const Matrix pw = Multiply(mw, false, q, false, n, m, r);
      for (size_t i = 0; i < p.size(); ++i) p[i] += pw[i];
      ms.push_back(std::move(mw));
    }
    for (int64_t c = 0; c < r; ++c) {  // classical Gram-Schmidt, exact enough in double
      for (int64_t earlier = 0; earlier < c; ++earlier) {
        double dot = 0;
        for (int64_t i = 0; i < n; ++i) dot += p[i * r + c] * p[i * r + earlier];
        for (int64_t i = 0; i < n; ++i) p[i * r + c] -= dot * p[i * r + earlier];
      }
      double norm = 0;
      for (int64_t i = 0; i < n; ++i) norm += p[i * r + c] * p[i * r + c];
      for (int64_t i = 0; i < n; ++i) p[i * r + c] /= std::sqrt(norm);
    }
    Matrix qs(size_t(m * r), 0.0);
    for (int w = 0; w < world; ++w) {
      const Matrix qw = Multiply(ms[w], true, p, false, m, n, r);
      for (size_t i = 0; i < qs.size(); ++i) qs[i] += qw[i];
    }
    Matrix approximation = Multiply(p, false, qs, true, n, r, m);
    for (int w = 0; w < world; ++w) {
      for (size_t i = 0; i < approximation.size(); ++i) {
        residuals[w][i] = ms[w][i] - approximation[i] / world;
      }
    }
    q = qs;
    return approximation;
  }
};

double MaxAbs(const std::vector<float>& values) {
  double max = 0;
  for (const float v : values) max = std::max(max, double(std::fabs(v)));
  return max;
}

void ExpectNear(const std::vector<float>& actual, const Matrix& expected, double tolerance,
                const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance) << what << " element " << i;
  }
}

TEST(PowerSGDCompressorTest, ReproducesAGradientOfRankAtMostR) {
  constexpr int64_t n = 16;
  constexpr int64_t m = 12;
  constexpr int64_t r = 2;
  // Every rank's gradient is U A_w with a shared U (n x r): the sum has rank <= r too.
  const std::vector<float> u = RandomValues(n * r, 1);
  const auto gradient = [&](int rank, int64_t step) {
    const std::vector<float> a = RandomValues(r * m, 10 + 7 * uint64_t(step) + uint64_t(rank));
    return Multiply(Matrix(u.begin(), u.end()), false, Matrix(a.begin(), a.end()), false, n, r, m);
  };
  RunRanks(2, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor({.kind = CompressorKind::kPowerSGD, .rank = r, .seed = 3});
    for (int64_t step = 0; step < 3; ++step) {
      const Matrix mine = gradient(comm.rank(), step);
      tensor::Tensor g = MakeTensor({n, m}, std::vector<float>(mine.begin(), mine.end()));
      compressor.Reduce("lowrank", {{"w", &g}}, comm, step);
      Matrix sum = gradient(0, step);
      const Matrix other = gradient(1, step);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
      ExpectNear(Values(g), sum, 1e-5 * 8, "step " + std::to_string(step));
    }
    EXPECT_EQ(compressor.stats().raw_bytes, 3 * n * m * 4);
    EXPECT_EQ(compressor.stats().wire_bytes, 3 * r * (n + m) * 4);
  });
}

class PowerSGDReferenceTest : public ::testing::TestWithParam<bool> {};

TEST_P(PowerSGDReferenceTest, MatchesTheFormulasStepByStep) {
  const bool warm_start = GetParam();
  constexpr int64_t n = 12;
  constexpr int64_t m = 10;
  constexpr int64_t r = 2;
  constexpr int kRanks = 3;
  const auto gradient = [](int rank, int64_t step) {
    return RandomValues(n * m, 100 * uint64_t(step) + uint64_t(rank));
  };
  Reference reference{n, m, r, kRanks, {}, {}};
  std::vector<Matrix> expected_results;
  std::vector<std::vector<Matrix>> expected_residuals;
  for (int64_t step = 0; step < 4; ++step) {
    std::vector<std::vector<float>> gradients;
    gradients.reserve(kRanks);
    for (int w = 0; w < kRanks; ++w) gradients.push_back(gradient(w, step));
    const std::vector<float> q = SeededNormal(5, "layer/w", uint64_t(step), m * r);
    expected_results.push_back(reference.Step(gradients, q, warm_start));
    expected_residuals.push_back(reference.residuals);
  }
  RunRanks(kRanks, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor(
        {.kind = CompressorKind::kPowerSGD, .rank = r, .warm_start = warm_start, .seed = 5});
    for (int64_t step = 0; step < 4; ++step) {
      tensor::Tensor g = MakeTensor({n, m}, gradient(comm.rank(), step));
      compressor.Reduce("ref", {{"layer/w", &g}}, comm, step);
      const std::string what = "step " + std::to_string(step);
      ExpectNear(Values(g), expected_results[step], 2e-5, what);
      ExpectNear(*compressor.residual("layer/w"), expected_residuals[step][comm.rank()], 2e-5,
                 what + " residual");
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WarmStart, PowerSGDReferenceTest, ::testing::Bool());

TEST(PowerSGDCompressorTest, WarmStartIsWhatMakesTheDifference) {
  // The reference above passes both ways; make sure the two are really different computations.
  constexpr int64_t n = 12;
  constexpr int64_t m = 10;
  constexpr int64_t r = 1;
  std::array<std::vector<Matrix>, 2> results;
  for (const bool warm : {false, true}) {
    Reference reference{n, m, r, 1, {}, {}};
    for (int64_t step = 0; step < 2; ++step) {
      results[warm].push_back(reference.Step({RandomValues(n * m, 9 + uint64_t(step))},
                                             SeededNormal(0, "w", uint64_t(step), m * r), warm));
    }
  }
  EXPECT_EQ(results[0][0], results[1][0]);
  EXPECT_NE(results[0][1], results[1][1]);
}

TEST(PowerSGDCompressorTest, EveryRankDrawsTheSameQ) {
  constexpr int64_t n = 20;
  constexpr int64_t m = 15;
  std::mutex mutex;
  std::vector<std::vector<float>> qs;
  std::vector<std::vector<float>> results;
  std::vector<std::vector<float>> residuals;
  RunRanks(4, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor({.kind = CompressorKind::kPowerSGD, .rank = 3, .seed = 42});
    tensor::Tensor g = MakeTensor({n, m}, RandomValues(n * m, 50 + uint64_t(comm.rank())));
    compressor.Reduce("same", {{"w", &g}}, comm, 0);
    std::lock_guard lock(mutex);
    qs.push_back(*compressor.q("w"));
    results.push_back(Values(g));
    residuals.push_back(*compressor.residual("w"));
  });
  for (size_t w = 1; w < qs.size(); ++w) {
    EXPECT_EQ(qs[w], qs[0]);
    EXPECT_EQ(results[w], results[0]);
    EXPECT_NE(residuals[w], residuals[0]);  // each rank keeps its own error
  }
  // The initial Q is a function of (seed, name, step) only.
  EXPECT_EQ(SeededNormal(42, "w", 0, 45), SeededNormal(42, "w", 0, 45));
  EXPECT_NE(SeededNormal(42, "w", 0, 45), SeededNormal(42, "v", 0, 45));
  EXPECT_NE(SeededNormal(42, "w", 0, 45), SeededNormal(43, "w", 0, 45));
}

TEST(PowerSGDCompressorTest, StepsBeforeStartStepAreExact) {
  constexpr int64_t n = 32;
  constexpr int64_t m = 16;
  RunRanks(2, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor({.kind = CompressorKind::kPowerSGD, .start_step = 2});
    for (int64_t step = 0; step < 3; ++step) {
      const auto values = [&](int rank) {
        return IntegerValues(n * m, 10 * uint64_t(step) + rank);
      };
      tensor::Tensor g = MakeTensor({n, m}, values(comm.rank()));
      const int before = comm.collectives();
      compressor.Reduce("warmup", {{"w", &g}}, comm, step);
      if (step < 2) {
        std::vector<float> sum = values(0);
        const std::vector<float> other = values(1);
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += other[i];
        EXPECT_EQ(Values(g), sum);
        EXPECT_EQ(comm.collectives() - before, 1);
        EXPECT_EQ(compressor.residual("w"), nullptr);
        EXPECT_EQ(compressor.stats().wire_bytes, (step + 1) * n * m * 4);
      } else {
        EXPECT_EQ(comm.collectives() - before, 2);  // P and Q
        EXPECT_NE(compressor.residual("w"), nullptr);
        EXPECT_EQ(compressor.stats().wire_bytes, 2 * n * m * 4 + (n + m) * 4);
      }
    }
  });
}

TEST(PowerSGDCompressorTest, SmallAndOneDimensionalTensorsGoUncompressed) {
  const std::vector<tensor::Shape> shapes = {{100}, {2, 2}, {40, 30}, {64, 32}, {}, {8, 1, 1}};
  const std::vector<std::string> names = {"bias",   "tiny",   "below_min",
                                          "kernel", "scalar", "column"};
  RunRanks(2, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor(
        {.kind = CompressorKind::kPowerSGD, .rank = 1, .min_compression_elements = 2000});
    for (size_t t = 0; t < shapes.size(); ++t) {
      EXPECT_EQ(compressor.Compresses(shapes[t]), names[t] == "kernel") << names[t];
    }
    std::vector<tensor::Tensor> tensors;
    for (size_t t = 0; t < shapes.size(); ++t) {
      tensors.push_back(MakeTensor(
          shapes[t], IntegerValues(size_t(tensor::NumElements(shapes[t])), 3 * t + comm.rank())));
    }
    compressor.Reduce("mixed", Group(names, tensors), comm, 0);
    EXPECT_EQ(comm.collectives(), 3);  // the uncompressed ones fused, P, Q
    for (size_t t = 0; t < shapes.size(); ++t) {
      if (names[t] == "kernel") {
        EXPECT_NE(compressor.residual(names[t]), nullptr);
        continue;
      }
      const auto count = size_t(tensor::NumElements(shapes[t]));
      std::vector<float> sum = IntegerValues(count, 3 * t);
      const std::vector<float> other = IntegerValues(count, 3 * t + 1);
      for (size_t i = 0; i < count; ++i) sum[i] += other[i];
      EXPECT_EQ(Values(tensors[t]), sum) << names[t];
      EXPECT_EQ(compressor.residual(names[t]), nullptr) << names[t];
    }
    EXPECT_EQ(compressor.stats().wire_bytes, (100 + 4 + 1200 + 1 + 8) * 4 + (64 + 32) * 4);
  });
}

TEST(PowerSGDCompressorTest, AZeroGradientDoesNotStallWarmStart) {
  // A zero gradient leaves Q = 0; the next step must draw a new Q rather than project on nothing.
  constexpr int64_t n = 10;
  constexpr int64_t m = 8;
  RunRanks(2, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor({.kind = CompressorKind::kPowerSGD, .rank = 1});
    tensor::Tensor zero = tensor::Tensor::Zeros(tensor::DType::kFloat32, {n, m});
    compressor.Reduce("z", {{"w", &zero}}, comm, 0);
    EXPECT_EQ(Values(zero), std::vector<float>(n * m, 0.0F));
    // Rank 1: the outer product of two fixed vectors, scaled per rank.
    const std::vector<float> u = RandomValues(n, 1);
    const std::vector<float> v = RandomValues(m, 2);
    std::vector<float> values(n * m);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) values[i * m + j] = float(comm.rank() + 1) * u[i] * v[j];
    }
    tensor::Tensor g = MakeTensor({n, m}, values);
    compressor.Reduce("z", {{"w", &g}}, comm, 1);
    for (int64_t i = 0; i < n * m; ++i) {
      ASSERT_NEAR(g.GetAsDouble(i), 3.0 * values[i] / float(comm.rank() + 1), 1e-5) << i;
    }
  });
}

TEST(PowerSGDCompressorTest, ErrorFeedbackKeepsTheRunningSumClose) {
  // Full-rank gradients with a steady part, r = 2: each step sends a rough approximation, but
  // what every step sent plus what the ranks still hold is exactly what they were given, and the
  // held part (the gap between sent and given) levels off while the sums keep growing.
  constexpr int64_t n = 32;
  constexpr int64_t m = 16;
  constexpr int kSteps = 400;
  const std::vector<float> steady = RandomValues(n * m, 77);
  const auto gradient = [&](int rank, int64_t step) {
    std::vector<float> g = RandomValues(n * m, 1000 * uint64_t(step) + uint64_t(rank));
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.5F * g[i] + steady[i];
    return g;
  };
  std::mutex mutex;
  Matrix residual_sum(n * m, 0.0);
  Matrix gap(n * m, 0.0);    // sum over steps of (given - sent), as rank 0 sees it
  std::vector<double> held;  // max |gap| after each step
  RunRanks(2, [&](ThreadCommunicator& comm) {
    PowerSGDCompressor compressor({.kind = CompressorKind::kPowerSGD, .rank = 2, .seed = 9});
    for (int64_t step = 0; step < kSteps; ++step) {
      tensor::Tensor g = MakeTensor({n, m}, gradient(comm.rank(), step));
      compressor.Reduce("ef", {{"w", &g}}, comm, step);
      if (comm.rank() != 0) continue;
      const std::vector<float> given0 = gradient(0, step);
      const std::vector<float> given1 = gradient(1, step);
      double max = 0;
      for (size_t i = 0; i < gap.size(); ++i) {
        gap[i] += double(given0[i]) + double(given1[i]) - double(g.data<float>()[i]);
        max = std::max(max, std::fabs(gap[i]));
      }
      held.push_back(max);
    }
    std::lock_guard lock(mutex);
    const std::vector<float>& residual = *compressor.residual("w");
    for (size_t i = 0; i < residual.size(); ++i) residual_sum[i] += residual[i];
  });
  // The gap is exactly the ranks' residuals together (up to float rounding).
  for (size_t i = 0; i < gap.size(); ++i) ASSERT_NEAR(gap[i], residual_sum[i], 1e-2) << i;
  // It levels off: the last 100 steps hold no more than twice the most of steps 50 to 100, and
  // far less than the running sum of the steady part (about 2 * 400 * |steady|).
  const double early = *std::max_element(held.begin() + 50, held.begin() + 100);
  const double late = *std::max_element(held.end() - 100, held.end());
  EXPECT_LT(late, 2 * early);
  EXPECT_LT(late, 0.05 * 2 * kSteps * MaxAbs(steady));
}

}  // namespace
}  // namespace autodist::compress::testing
