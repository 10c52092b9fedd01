#include "gpu/compress/powersgd_flat_compressor.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <memory>

#include "gpu/compress/powersgd_device.h"
#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/common/error.h"
#include "runtime/compress/powersgd_compressor.h"
#include "runtime/compress/powersgd_math.h"

namespace autodist::gpu {
namespace {

constexpr const char* kName = "PowerSGDCompressor";

}  // namespace

PowerSGDFlatCompressor::PowerSGDFlatCompressor(const compress::CompressorOptions& options)
    : options_(options), residuals_(kName, "residual"), qs_(kName, "Q") {
  AD_CHECK(options.kind == compress::CompressorKind::kPowerSGD, kInternal,
           "PowerSGDFlatCompressor made for {}", compress::CompressorName(options.kind));
  compress::CheckPowerSGDOptions(options);
}

void PowerSGDFlatCompressor::ReduceDense(const std::string& tag, float* values,
                                         const std::vector<const compress::FlatMember*>& members,
                                         collective::Communicator& communicator, int index,
                                         cudaStream_t stream) {
  if (members.empty()) return;
  int64_t total = 0;
  for (const compress::FlatMember* member : members) total += tensor::NumElements(member->shape);
  if (members.size() == 1) {
    // Nothing to pack: spare the two copies, as the CPU compressor does.
    communicator.AllReduceSum(values + members.front()->offset, static_cast<size_t>(total),
                              collective::ElementType::kFloat32, options_.algorithm, tag);
  } else {
    auto* packed = GrowDeviceBuffer<float>(dense_, FloatBytes(total), index, stream);
    int64_t at = 0;
    for (const compress::FlatMember* member : members) {
      const int64_t n = tensor::NumElements(member->shape);
      CheckCuda(cudaMemcpyAsync(packed + at, values + member->offset, FloatBytes(n),
                                cudaMemcpyDeviceToDevice, stream),
                [&] { return fmt::format("packing '{}' for '{}'", member->name, tag); });
      at += n;
    }
    communicator.AllReduceSum(packed, static_cast<size_t>(total), collective::ElementType::kFloat32,
                              options_.algorithm, tag);
    at = 0;
    for (const compress::FlatMember* member : members) {
      const int64_t n = tensor::NumElements(member->shape);
      CheckCuda(cudaMemcpyAsync(values + member->offset, packed + at, FloatBytes(n),
                                cudaMemcpyDeviceToDevice, stream),
                [&] { return fmt::format("unpacking '{}' from '{}'", member->name, tag); });
      at += n;
    }
  }
  stats_.wire_bytes += total * static_cast<int64_t>(sizeof(float));
}

void PowerSGDFlatCompressor::Reduce(const std::string& group, tensor::Tensor& buffer,
                                    const std::vector<compress::FlatMember>& members,
                                    collective::Communicator& communicator, int64_t step) {
  const int index = FlatBufferGpu(kName, group, buffer);
  if (members.empty()) return;
  UseGpu(index);  // a communication thread's current GPU may be another
  cudaStream_t stream = TensorStream(index);
  auto* values = static_cast<float*>(buffer.raw());

  // The split depends on shapes and options only, so every rank runs the same collectives.
  const int64_t r = options_.rank;
  const bool compressing = step >= options_.start_step;
  std::vector<const compress::FlatMember*> dense;
  std::vector<LowRank> low_rank;
  int64_t p_size = 0;
  int64_t q_size = 0;
  for (const compress::FlatMember& member : members) {
    const int64_t elements = tensor::NumElements(member.shape);
    AD_CHECK(member.offset >= 0 && member.offset + elements <= buffer.numel(), kInternal,
             "{}: group '{}': '{}' lies outside the buffer", kName, group, member.name);
    stats_.raw_bytes += elements * static_cast<int64_t>(sizeof(float));
    if (!compressing || !compress::PowerSGDCompresses(options_, member.shape)) {
      dense.push_back(&member);
      continue;
    }
    const int64_t n = member.shape[0];
    const int64_t m = elements / n;
    low_rank.push_back({&member, n, m, p_size, q_size});
    p_size += n * r;
    q_size += m * r;
  }
  ReduceDense(compressing ? group + "/uncompressed" : group, values, dense, communicator, index,
              stream);
  if (low_rank.empty()) return;

  auto* p = GrowDeviceBuffer<float>(p_, FloatBytes(p_size), index, stream);
  auto* q = GrowDeviceBuffer<float>(q_, FloatBytes(q_size), index, stream);
  for (LowRank& matrix : low_rank) {
    const compress::FlatMember& member = *matrix.member;
    matrix.residual = residuals_.Get(group, member.name, matrix.n * matrix.m, index, stream);
    const bool fresh = !qs_.Contains(member.name);
    matrix.kept_q = qs_.Get(group, member.name, matrix.m * r, index, stream);
    if (fresh || !options_.warm_start || degenerate_q_[member.name]) {
      // The CPU's draw, so that every rank (and the CPU path) starts from the same Q. A copy
      // from pageable memory has taken its bytes when it returns.
      const std::vector<float> drawn =
          compress::SeededNormal(options_.seed, member.name, static_cast<uint64_t>(step),
                                 static_cast<size_t>(matrix.m * r));
      CheckCuda(cudaMemcpyAsync(matrix.kept_q, drawn.data(), FloatBytes(matrix.m * r),
                                cudaMemcpyHostToDevice, stream),
                [&] { return fmt::format("{}: drawing Q of '{}'", kName, member.name); });
    }
    ProjectOnDevice(values + member.offset, matrix.residual, matrix.n, matrix.m, matrix.kept_q, r,
                    p + matrix.p_offset, index, stream);
  }
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: projecting group '{}'", kName, group); });
  communicator.AllReduceSum(p, static_cast<size_t>(p_size), collective::ElementType::kFloat32,
                            options_.algorithm, group + "/P");
  for (const LowRank& matrix : low_rank) {
    float* p_matrix = p + matrix.p_offset;
    OrthonormalizeColumnsOnDevice(p_matrix, matrix.n, r,
                                  compress::kPowerSGDOrthogonalizationEpsilon, TensorPool(index),
                                  stream);
    ReprojectOnDevice(values + matrix.member->offset, matrix.n, matrix.m, p_matrix, r,
                      q + matrix.q_offset, index, stream);
  }
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: reprojecting group '{}'", kName, group); });
  communicator.AllReduceSum(q, static_cast<size_t>(q_size), collective::ElementType::kFloat32,
                            options_.algorithm, group + "/Q");
  const int world = communicator.size();
  for (const LowRank& matrix : low_rank) {
    const compress::FlatMember& member = *matrix.member;
    CheckCuda(cudaMemcpyAsync(matrix.kept_q, q + matrix.q_offset, FloatBytes(matrix.m * r),
                              cudaMemcpyDeviceToDevice, stream),
              [&] { return fmt::format("{}: keeping Q of '{}'", kName, member.name); });
    DecompressOnDevice(values + member.offset, matrix.residual, matrix.n, matrix.m,
                       p + matrix.p_offset, q + matrix.q_offset, r, world, index, stream);
  }
  CheckCuda(cudaGetLastError(),
            [&] { return fmt::format("{}: decompressing group '{}'", kName, group); });
  if (options_.warm_start) {
    // Next step starts from these Qs unless one has a zero or non-finite column: read back once
    // for the whole group, waiting for this group's work only (an event), not for what backward
    // queued on the stream after it.
    host_q_.resize(static_cast<size_t>(q_size));
    CheckCuda(
        cudaMemcpyAsync(host_q_.data(), q, FloatBytes(q_size), cudaMemcpyDeviceToHost, stream),
        [&] { return fmt::format("{}: reading back the Qs of group '{}'", kName, group); });
    if (!read_back_) read_back_ = std::make_unique<Event>();
    read_back_->Record(stream);
    read_back_->Synchronize();
    for (const LowRank& matrix : low_rank) {
      degenerate_q_[matrix.member->name] =
          compress::HasDegenerateColumn(host_q_.data() + matrix.q_offset, matrix.m, r);
    }
  }
  stats_.wire_bytes += (p_size + q_size) * static_cast<int64_t>(sizeof(float));
}

void PowerSGDFlatCompressor::Register() {
  compress::RegisterFlatCompressor(compress::CompressorKind::kPowerSGD, tensor::DeviceKind::kCuda,
                                   [](const compress::CompressorOptions& options) {
                                     return std::unique_ptr<compress::FlatCompressor>(
                                         std::make_unique<PowerSGDFlatCompressor>(options));
                                   });
}

}  // namespace autodist::gpu
