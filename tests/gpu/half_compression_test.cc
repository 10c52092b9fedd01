// The float16 compression kernels against the CPU's routines on the same inputs, bit for bit:
// the cast (round to nearest, ties to even, overflow, subnormals), the error-feedback residual
// (0 where a finite value overflowed), and the way back; aligned arrays (the vector path) and
// misaligned ones with odd lengths (the scalar path). And the Horovod compressors' flat form on
// the GPU (half_flat_compressor.h, the all-reduce on the GPUs) against the CPU compressor on the
// same group buffers, three steps, with and without error feedback, on a 1-rank stand-in
// communicator (NCCL's part is the job tests'); PowerSGD's flat form (powersgd_flat_compressor.h)
// the same way, within float rounding, and TopK's (topk_flat_compressor.h) bit for bit. SKIPPED
// without a GPU.
#include "gpu/compress/half_compression.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/compress/half_flat_compressor.h"
#include "gpu/compress/powersgd_flat_compressor.h"
#include "gpu/compress/topk_flat_compressor.h"
#include "gpu/device/cuda_error.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/compress/error_feedback.h"
#include "runtime/compress/flat_compressor.h"
#include "runtime/tensor/float16.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

// A device copy of `bytes` at `host`, with `offset` bytes of room first (misalignment).
class DeviceBytes {
 public:
  DeviceBytes(const void* host, size_t bytes, size_t offset) : bytes_(bytes), offset_(offset) {
    CheckCuda(cudaMalloc(&base_, bytes + offset + 16), "test: cudaMalloc");
    if (host != nullptr) {
      CheckCuda(cudaMemcpy(data(), host, bytes, cudaMemcpyHostToDevice), "test: to the device");
    }
  }
  ~DeviceBytes() { cudaFree(base_); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  void* data() { return static_cast<char*>(base_) + offset_; }
  template <typename T>
  std::vector<T> Read() {
    std::vector<T> out(bytes_ / sizeof(T));
    CheckCuda(cudaMemcpy(out.data(), data(), bytes_, cudaMemcpyDeviceToHost), "test: to the host");
    return out;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_;
  size_t offset_;
};

bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool SameHalf(uint16_t a, uint16_t b) {
  const bool nan_a = (a & 0x7C00U) == 0x7C00U && (a & 0x03FFU) != 0;
  const bool nan_b = (b & 0x7C00U) == 0x7C00U && (b & 0x03FFU) != 0;
  return nan_a || nan_b ? nan_a && nan_b : a == b;
}

struct Layout {
  size_t count;
  size_t offset;  // bytes: 0 keeps the vector path, 4 forces the scalar one
};

class HalfCompressionTest : public ::testing::TestWithParam<Layout> {};

TEST_P(HalfCompressionTest, CastsAndErrorFeedbackMatchTheCpuBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const auto [count, offset] = GetParam();
  const std::vector<float> gradient = testing::CastInputs(count, 1);
  std::vector<float> residual = testing::CastInputs(count, 2);
  for (float& r : residual) r = std::isfinite(r) ? r * 1.0e-4F : 0.0F;

  std::vector<uint16_t> cpu_plain(count);
  tensor::FloatsToHalves(gradient.data(), count, cpu_plain.data());
  std::vector<float> cpu_residual = residual;
  std::vector<uint16_t> cpu_feedback(count);
  compress::FloatsToHalvesWithFeedback(gradient.data(), count, cpu_residual.data(),
                                       cpu_feedback.data());

  DeviceBytes device_gradient(gradient.data(), count * sizeof(float), offset);
  DeviceBytes device_residual(residual.data(), count * sizeof(float), offset);
  DeviceBytes plain(nullptr, count * sizeof(uint16_t), offset / 2);
  DeviceBytes feedback(nullptr, count * sizeof(uint16_t), offset / 2);
  const auto* g = static_cast<const float*>(device_gradient.data());
  FloatsToHalvesOnDevice(g, nullptr, static_cast<uint16_t*>(plain.data()), count, nullptr);
  FloatsToHalvesOnDevice(g, static_cast<float*>(device_residual.data()),
                         static_cast<uint16_t*>(feedback.data()), count, nullptr);
  CheckCuda(cudaDeviceSynchronize(), "test: the kernels");

  const std::vector<uint16_t> got_plain = plain.Read<uint16_t>();
  const std::vector<uint16_t> got_feedback = feedback.Read<uint16_t>();
  const std::vector<float> got_residual = device_residual.Read<float>();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(SameHalf(got_plain[i], cpu_plain[i]))
        << "element " << i << " (" << gradient[i] << "): " << got_plain[i] << " vs "
        << cpu_plain[i];
    ASSERT_TRUE(SameHalf(got_feedback[i], cpu_feedback[i])) << "element " << i;
    ASSERT_TRUE(SameFloat(got_residual[i], cpu_residual[i]))
        << "element " << i << ": residual " << got_residual[i] << " vs " << cpu_residual[i];
  }

  // And back: exact, as on the CPU.
  DeviceBytes back(nullptr, count * sizeof(float), offset);
  HalvesToFloatsOnDevice(static_cast<const uint16_t*>(feedback.data()),
                         static_cast<float*>(back.data()), count, nullptr);
  CheckCuda(cudaDeviceSynchronize(), "test: the kernel");
  std::vector<float> cpu_back(count);
  tensor::HalvesToFloats(cpu_feedback.data(), count, cpu_back.data());
  const std::vector<float> got_back = back.Read<float>();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(SameFloat(got_back[i], cpu_back[i])) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HalfCompressionTest,
                         ::testing::Values(Layout{1, 0}, Layout{3, 0}, Layout{4096, 0},
                                           Layout{1000003, 0}, Layout{1001, 4}),
                         [](const ::testing::TestParamInfo<Layout>& param) {
                           return std::to_string(param.param.count) +
                                  (param.param.offset == 0 ? "_aligned" : "_misaligned");
                         });

using collective::AllReduceAlgorithm;
using collective::ElementType;
using tensor::Tensor;

// One rank: every collective is the identity, wherever the buffers are (a sum over one rank is the
// value itself; copies go through cudaMemcpyDefault, host or device), so the compressors' own
// work is all that is compared.
class OneRank final : public collective::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void AllReduceSum(void*, size_t, ElementType, AllReduceAlgorithm, const std::string&) override {}
  void AllGather(const void* in, size_t count, ElementType type, void* out,
                 const std::string&) override {
    CheckCuda(cudaMemcpy(out, in, count * collective::ElementBytes(type), cudaMemcpyDefault),
              "OneRank::AllGather");
  }
  void ReduceScatterSum(const void* in, void* out, size_t count, ElementType type,
                        const std::string&) override {
    if (in != out) {
      CheckCuda(cudaMemcpy(out, in, count * collective::ElementBytes(type), cudaMemcpyDefault),
                "OneRank::ReduceScatterSum");
    }
  }
  std::vector<size_t> AllGatherV(const void* in, size_t count, ElementType type,
                                 std::vector<std::byte>& out, const std::string&) override {
    out.resize(count * collective::ElementBytes(type));
    CheckCuda(cudaMemcpy(out.data(), in, out.size(), cudaMemcpyDefault), "OneRank::AllGatherV");
    return {count};
  }
  void Broadcast(void*, size_t, int, const std::string&) override {}
  void Barrier(const std::string&) override {}
  void Abort(const std::string&) override {}
  int64_t bytes_sent() const override { return 0; }
  int64_t bytes_received() const override { return 0; }
};

// Two members at 4-element boundaries, as the all-reduce part lays them out.
const std::vector<compress::FlatMember> kMembers{{"fc.weight", 0, {3, 5}}, {"fc.bias", 16, {7}}};
constexpr int64_t kBuffer = 24;

// Step `step`'s buffer: normal values, some past float16's range, a few below its subnormals.
Tensor StepBuffer(int step) {
  std::mt19937 rng(static_cast<uint32_t>(step + 1));
  std::normal_distribution<float> noise(0.0F, 1.0F);
  Tensor buffer(tensor::DType::kFloat32, {kBuffer});
  for (int64_t i = 0; i < kBuffer; ++i) buffer.data<float>()[i] = noise(rng);
  buffer.data<float>()[2] = 70000.0F;   // overflows to infinity
  buffer.data<float>()[17] = 1.0e-9F;   // rounds to zero, all of it kept as residual
  buffer.data<float>()[18] = -3.3e-5F;  // a subnormal half
  return buffer;
}

// Runs `steps` steps of `gpu` and of the CPU's form of `options` on the same group buffers
// (`buffer(step)`) through one rank, calling `check(got, expected, step)` after each; then checks
// that both counted the same bytes.
void CompareWithTheCpu(compress::FlatCompressor& gpu, const compress::CompressorOptions& options,
                       const std::vector<compress::FlatMember>& members,
                       const std::function<Tensor(int)>& buffer, int steps,
                       const std::function<void(const Tensor&, const Tensor&, int)>& check) {
  const std::unique_ptr<compress::FlatCompressor> cpu =
      compress::MakeFlatCompressor(options, tensor::DeviceKind::kCpu);
  OneRank one;
  for (int step = 0; step < steps; ++step) {
    Tensor expected = buffer(step);
    Tensor on_gpu = expected.To(tensor::Device::Cuda(0));
    cpu->Reduce("group-0", expected, members, one, step);
    gpu.Reduce("group-0", on_gpu, members, one, step);
    check(on_gpu.To(tensor::Device::Cpu()), expected, step);
  }
  EXPECT_EQ(gpu.stats().raw_bytes, cpu->stats().raw_bytes);
  EXPECT_EQ(gpu.stats().wire_bytes, cpu->stats().wire_bytes);
}

// Every member of `got` has the bits of `expected`'s.
void ExpectMembersSameBits(const Tensor& got, const Tensor& expected,
                           const std::vector<compress::FlatMember>& members, int step) {
  for (const compress::FlatMember& member : members) {
    const int64_t n = tensor::NumElements(member.shape);
    EXPECT_EQ(std::memcmp(got.data<float>() + member.offset, expected.data<float>() + member.offset,
                          n * sizeof(float)),
              0)
        << member.name << " at step " << step;
  }
}

class HalfFlatCompressorTest : public ::testing::TestWithParam<compress::CompressorKind> {};

TEST_P(HalfFlatCompressorTest, MatchesTheCpuCompressorBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  compress::CompressorOptions options;
  options.kind = GetParam();
  HalfFlatCompressor gpu(options);
  CompareWithTheCpu(gpu, options, kMembers, StepBuffer, 3,
                    [](const Tensor& got, const Tensor& expected, int step) {
                      ExpectMembersSameBits(got, expected, kMembers, step);
                      EXPECT_TRUE(std::isinf(got.data<float>()[2])) << "step " << step;
                    });
  EXPECT_EQ(gpu.stats().raw_bytes, 3 * 22 * 4);
}

INSTANTIATE_TEST_SUITE_P(Kinds, HalfFlatCompressorTest,
                         ::testing::Values(compress::CompressorKind::kHorovod,
                                           compress::CompressorKind::kHorovodEF),
                         [](const ::testing::TestParamInfo<compress::CompressorKind>& param) {
                           return std::string(compress::CompressorName(param.param));
                         });

TEST(HalfFlatCompressorTest, IsWhatTheBackendRegistersForCuda) {
  EXPECT_TRUE(
      compress::HasFlatCompressor(compress::CompressorKind::kHorovodEF, tensor::DeviceKind::kCuda));
  EXPECT_TRUE(
      compress::HasFlatCompressor(compress::CompressorKind::kPowerSGD, tensor::DeviceKind::kCuda));
  EXPECT_TRUE(
      compress::HasFlatCompressor(compress::CompressorKind::kTopKEF, tensor::DeviceKind::kCuda));
}

// A group as the all-reduce part lays it out (members at 4-element boundaries): two matrices
// PowerSGD compresses at rank 2, a bias it leaves dense, and a matrix whose gradient is zero
// every step (its Q degenerates and is drawn afresh).
const std::vector<compress::FlatMember> kPowerSGDMembers{{"fc1.weight", 0, {12, 20}},
                                                         {"fc1.bias", 240, {7}},
                                                         {"fc2.weight", 248, {8, 10}},
                                                         {"dead.weight", 328, {6, 6}}};
constexpr int64_t kPowerSGDBuffer = 364;

Tensor PowerSGDStepBuffer(int step) {
  std::mt19937 rng(static_cast<uint32_t>(100 + step));
  std::normal_distribution<float> noise(0.0F, 1.0F);
  Tensor buffer(tensor::DType::kFloat32, {kPowerSGDBuffer});
  float* values = buffer.data<float>();
  for (int64_t i = 0; i < kPowerSGDBuffer; ++i) values[i] = i >= 328 ? 0.0F : noise(rng);
  return buffer;
}

class PowerSGDFlatCompressorTest : public ::testing::TestWithParam<bool> {};

TEST_P(PowerSGDFlatCompressorTest, MatchesTheCpuCompressorWithinFloatRounding) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  compress::CompressorOptions options;
  options.kind = compress::CompressorKind::kPowerSGD;
  options.rank = 2;
  options.start_step = 1;  // step 0 all-reduces every member uncompressed
  options.warm_start = GetParam();
  PowerSGDFlatCompressor gpu(options);
  CompareWithTheCpu(
      gpu, options, kPowerSGDMembers, PowerSGDStepBuffer, 4,
      [](const Tensor& got, const Tensor& expected, int step) {
        for (const compress::FlatMember& member : kPowerSGDMembers) {
          const int64_t n = tensor::NumElements(member.shape);
          for (int64_t i = member.offset; i < member.offset + n; ++i) {
            const float want = expected.data<float>()[i];
            ASSERT_NEAR(got.data<float>()[i], want, 1e-4 * std::max(1.0F, std::fabs(want)))
                << member.name << " element " << i - member.offset << " at step " << step;
          }
        }
      });
  EXPECT_LT(gpu.stats().wire_bytes, gpu.stats().raw_bytes);
}

TEST(TopKFlatCompressorTest, MatchesTheCpuCompressorBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  compress::CompressorOptions options;
  options.kind = compress::CompressorKind::kTopKEF;
  options.fraction = 0.05;  // 18 of the group's 363 elements
  TopKFlatCompressor gpu(options);
  const auto buffer = [](int step) {
    Tensor values = PowerSGDStepBuffer(step);
    values.data<float>()[5] = -1.0e6F;                  // the largest magnitude, every step
    values.data<float>()[7] = values.data<float>()[6];  // a tie: the lower index first
    return values;
  };
  CompareWithTheCpu(gpu, options, kPowerSGDMembers, buffer, 4,
                    [](const Tensor& got, const Tensor& expected, int step) {
                      ExpectMembersSameBits(got, expected, kPowerSGDMembers, step);
                    });
}

TEST(TopKFlatCompressorTest, RefusesTheOptionsTheCpuCompressorRefuses) {
  compress::CompressorOptions options;
  options.kind = compress::CompressorKind::kTopKEF;
  options.fraction = 1.5;
  EXPECT_THROW(TopKFlatCompressor refused(options), Error);
}

INSTANTIATE_TEST_SUITE_P(WarmStart, PowerSGDFlatCompressorTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return std::string(param.param ? "warm" : "cold");
                         });

TEST(PowerSGDFlatCompressorTest, RefusesTheOptionsTheCpuCompressorRefuses) {
  compress::CompressorOptions options;
  options.kind = compress::CompressorKind::kPowerSGD;
  options.rank = 0;
  try {
    PowerSGDFlatCompressor refused(options);
    ADD_FAILURE() << "rank 0 was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what()).find("rank must be at least 1"), std::string::npos);
  }
}

}  // namespace
}  // namespace autodist::gpu
