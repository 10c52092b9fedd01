// The Horovod compressors inside the all-reduce on the GPUs (gpu/compress/half_flat_compressor.h)
// against their CPU form (the CPU compressor on views of the buffer), on the same group buffers,
// three steps each, with and without error feedback: a 1-rank NCCL communicator on the GPU, a
// 1-rank stand-in on the CPU (a sum over one rank is the value itself), so the members must come
// back with the same bits, overflow to infinity included. Needs a GPU (SKIPPED without one) and
// NCCL (not built without it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "gpu/compress/half_flat_compressor.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/collective/registry.h"
#include "runtime/common/error.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using collective::AllReduceAlgorithm;
using collective::ElementType;
using tensor::Tensor;

// One rank on the host: every collective is the identity.
class OneHostRank final : public collective::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void AllReduceSum(void*, size_t, ElementType, AllReduceAlgorithm, const std::string&) override {}
  void AllGather(const void* in, size_t count, ElementType type, void* out,
                 const std::string&) override {
    std::memcpy(out, in, count * collective::ElementBytes(type));
  }
  void ReduceScatterSum(const void* in, void* out, size_t count, ElementType type,
                        const std::string&) override {
    if (in != out) std::memcpy(out, in, count * collective::ElementBytes(type));
  }
  std::vector<size_t> AllGatherV(const void* in, size_t count, ElementType type,
                                 std::vector<std::byte>& out, const std::string&) override {
    out.resize(count * collective::ElementBytes(type));
    std::memcpy(out.data(), in, out.size());
    return {count};
  }
  void Broadcast(void*, size_t, int, const std::string&) override {}
  void Barrier(const std::string&) override {}
  int64_t bytes_sent() const override { return 0; }
  int64_t bytes_received() const override { return 0; }
};

std::unique_ptr<collective::Communicator> OneGpuRank() {
  collective::CommunicatorOptions options;
  options.rendezvous = std::make_shared<collective::MemoryRendezvousStore>();
  options.prefix = "flat";
  options.device = 0;
  options.connect_timeout = std::chrono::seconds(60);
  options.timeout = std::chrono::seconds(60);
  return collective::MakeCommunicator("nccl", options);
}

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

class HalfFlatCompressorTest : public ::testing::TestWithParam<compress::CompressorKind> {};

TEST_P(HalfFlatCompressorTest, MatchesTheCpuCompressorBitForBit) {
  AUTODIST_SKIP_WITHOUT_GPU();
  InstallCudaTensorMemory();
  compress::CompressorOptions options;
  options.kind = GetParam();
  HalfFlatCompressor gpu(options);
  const std::unique_ptr<compress::FlatCompressor> cpu =
      compress::MakeFlatCompressor(options, tensor::DeviceKind::kCpu);
  const std::unique_ptr<collective::Communicator> nccl = OneGpuRank();
  OneHostRank host;
  for (int step = 0; step < 3; ++step) {
    Tensor expected = StepBuffer(step);
    Tensor on_gpu = expected.To(tensor::Device::Cuda(0));
    cpu->Reduce("group-0", expected, kMembers, host, step);
    gpu.Reduce("group-0", on_gpu, kMembers, *nccl, step);
    const Tensor got = on_gpu.To(tensor::Device::Cpu());
    for (const compress::FlatMember& member : kMembers) {
      const int64_t n = tensor::NumElements(member.shape);
      EXPECT_EQ(std::memcmp(got.data<float>() + member.offset,
                            expected.data<float>() + member.offset, n * sizeof(float)),
                0)
          << member.name << " at step " << step;
    }
    EXPECT_TRUE(std::isinf(got.data<float>()[2])) << "step " << step;
  }
  EXPECT_EQ(gpu.stats().raw_bytes, cpu->stats().raw_bytes);
  EXPECT_EQ(gpu.stats().wire_bytes, cpu->stats().wire_bytes);
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
  EXPECT_FALSE(
      compress::HasFlatCompressor(compress::CompressorKind::kPowerSGD, tensor::DeviceKind::kCuda));
}

}  // namespace
}  // namespace autodist::gpu
