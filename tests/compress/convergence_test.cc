// Convergence sanity without a dataset: linear least squares (a 64 x 32 weight and a bias) on
// synthetic data, trained with synchronous SGD on 2 thread-ranks, reaches the uncompressed loss
// within a few percent with PowerSGD (r = 2) and with TopK (10%) + error feedback, the way the
// compressed strategies must reach the uncompressed accuracy on real models.
//
// The learning rate decays linearly to 0, as real schedules do towards the end: error feedback
// leaves the parameters off the "virtual" error-free iterate by lr * residual / replicas, which a
// constant rate never shrinks. (At a constant 0.1 PowerSGD r = 2 levels off about 25% above the
// uncompressed loss here; with the decay it ends within 0.1%. docs/compression.md.)
#include <gtest/gtest.h>

#include <random>

#include "runtime/compress/compressor.h"
#include "tests/compress/compress_test_util.h"
#include "tests/compress/thread_communicator.h"

namespace autodist::compress::testing {
namespace {

constexpr int64_t kOut = 64, kIn = 32, kBatch = 16;
constexpr int kRanks = 2;
constexpr int kSteps = 400;
constexpr float kLearningRate = 0.1F;  // at step 0, then linearly down to 0
constexpr float kNoise = 0.1F;

// The problem: y = W* x + b* + noise, x standard normal.
struct Problem {
  std::vector<float> w_star = RandomValues(kOut * kIn, 1);
  std::vector<float> b_star = RandomValues(kOut, 2);

  // `count` samples (x, y) drawn from `seed`.
  void Samples(uint64_t seed, int64_t count, std::vector<float>& x, std::vector<float>& y) const {
    std::mt19937_64 engine(seed);
    std::normal_distribution<float> normal;
    x.resize(size_t(count * kIn));
    y.resize(size_t(count * kOut));
    for (float& value : x) value = normal(engine);
    for (int64_t s = 0; s < count; ++s) {
      for (int64_t o = 0; o < kOut; ++o) {
        float sum = b_star[o] + kNoise * normal(engine);
        for (int64_t i = 0; i < kIn; ++i) sum += w_star[o * kIn + i] * x[s * kIn + i];
        y[s * kOut + o] = sum;
      }
    }
  }
};

// Mean over samples of 1/2 |W x + b - y|^2; with `grad_w`/`grad_b`, also its gradient.
double Loss(const std::vector<float>& w, const std::vector<float>& b, const std::vector<float>& x,
            const std::vector<float>& y, float* grad_w = nullptr, float* grad_b = nullptr) {
  const int64_t count = int64_t(x.size()) / kIn;
  double loss = 0;
  if (grad_w != nullptr) std::fill(grad_w, grad_w + kOut * kIn, 0.0F);
  if (grad_b != nullptr) std::fill(grad_b, grad_b + kOut, 0.0F);
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t o = 0; o < kOut; ++o) {
      float error = b[o] - y[s * kOut + o];
      for (int64_t i = 0; i < kIn; ++i) error += w[o * kIn + i] * x[s * kIn + i];
      loss += 0.5 * double(error) * double(error);
      if (grad_w == nullptr) continue;
      const float scaled = error / float(count);
      for (int64_t i = 0; i < kIn; ++i) grad_w[o * kIn + i] += scaled * x[s * kIn + i];
      grad_b[o] += scaled;
    }
  }
  return loss / double(count);
}

// Trains with `options` and returns the final held-out loss (and the initial one).
double Train(const CompressorOptions& options, double* initial_loss = nullptr) {
  const Problem problem;
  std::vector<float> eval_x;
  std::vector<float> eval_y;
  problem.Samples(999, 512, eval_x, eval_y);
  double final_loss = 0;
  RunRanks(kRanks, [&](ThreadCommunicator& comm) {
    const auto compressor = MakeCompressor(options);
    std::vector<float> w(kOut * kIn, 0.0F);
    std::vector<float> b(kOut, 0.0F);
    if (comm.rank() == 0 && initial_loss != nullptr) {
      *initial_loss = Loss(w, b, eval_x, eval_y);
    }
    std::vector<float> x;
    std::vector<float> y;
    for (int64_t step = 0; step < kSteps; ++step) {
      const float lr = kLearningRate * (1.0F - float(step) / float(kSteps));
      problem.Samples(uint64_t(step * kRanks + comm.rank()), kBatch, x, y);
      tensor::Tensor grad_w(tensor::DType::kFloat32, {kOut, kIn});
      tensor::Tensor grad_b(tensor::DType::kFloat32, {kOut});
      Loss(w, b, x, y, grad_w.data<float>(), grad_b.data<float>());
      compressor->Reduce("model", {{"w", &grad_w}, {"b", &grad_b}}, comm, step);
      // The sum over ranks / replicas: the mean gradient of the global batch.
      for (int64_t i = 0; i < kOut * kIn; ++i) {
        w[i] -= lr * grad_w.data<float>()[i] / kRanks;
      }
      for (int64_t o = 0; o < kOut; ++o) b[o] -= lr * grad_b.data<float>()[o] / kRanks;
    }
    if (comm.rank() == 0) final_loss = Loss(w, b, eval_x, eval_y);
  });
  return final_loss;
}

TEST(ConvergenceTest, CompressedTrainingReachesTheUncompressedLoss) {
  double initial = 0;
  const double none = Train({.kind = CompressorKind::kNone}, &initial);
  // The noise floor is 1/2 * 64 * 0.1^2 = 0.32; the uncompressed run gets near it.
  EXPECT_LT(none, 0.02 * initial);
  EXPECT_LT(none, 0.4);

  const double powersgd = Train({.kind = CompressorKind::kPowerSGD, .rank = 2, .seed = 1});
  const double topk = Train({.kind = CompressorKind::kTopKEF, .fraction = 0.1});
  const double fp16 = Train({.kind = CompressorKind::kHorovodEF});
  std::printf(
      "held-out loss: initial %.4F none %.4F powersgd(r=2) %.4F topk(10%%)+ef %.4F "
      "fp16+ef %.4F\n",
      initial, none, powersgd, topk, fp16);
  EXPECT_LT(powersgd, 1.03 * none);
  EXPECT_LT(topk, 1.03 * none);
  EXPECT_LT(fp16, 1.01 * none);
}

}  // namespace
}  // namespace autodist::compress::testing
