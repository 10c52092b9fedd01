#include "runtime/tensor/device.h"

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <charconv>

#include "runtime/common/error.h"

namespace autodist::tensor {
namespace {

constexpr size_t kKinds = 2;

std::array<std::atomic<DeviceMemory*>, kKinds>& Installed() {
  static std::array<std::atomic<DeviceMemory*>, kKinds> installed{};
  return installed;
}

}  // namespace

std::string_view DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kCpu ? "cpu" : "cuda";
}

std::string DeviceName(const Device& device) {
  if (device.is_cpu()) return "cpu";
  return fmt::format("{}:{}", DeviceKindName(device.kind), device.index);
}

Device ParseDevice(std::string_view name, std::string_view field) {
  if (name == "cpu") return Device::Cpu();
  if (name == "cuda") return Device::Cuda(0);
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (name.starts_with(kCudaPrefix)) {
    const std::string_view digits = name.substr(kCudaPrefix.size());
    int index = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && !digits.empty() &&
        index >= 0) {
      return Device::Cuda(index);
    }
  }
  Fail(ErrorCode::kInvalidArgument, "{}: unknown device \"{}\"; expected cpu, cuda or cuda:N",
       field, name);
}

DeviceMemory::Upload DeviceMemory::UploadAhead(const void* source, size_t bytes,
                                               const Device& device) {
  Upload upload;
  upload.data = Allocate(bytes, device.index);
  Copy(upload.data.get(), device, source, Device::Cpu(), bytes);
  return upload;
}

void DeviceMemory::Await(const Upload& /*upload*/, const Device& /*device*/) {}

void DeviceMemory::Select(const Device& /*device*/) {}

std::shared_ptr<std::byte[]> DeviceMemory::AllocateHostStaging(size_t /*bytes*/) {  // NOLINT
  return nullptr;
}

void InstallDeviceMemory(DeviceKind kind, DeviceMemory* memory) {
  AD_CHECK(kind != DeviceKind::kCpu, kInternal, "the CPU's memory is built in");
  Installed()[static_cast<size_t>(kind)].store(memory);
}

bool HasMemory(DeviceKind kind) {
  return kind == DeviceKind::kCpu || Installed()[static_cast<size_t>(kind)].load() != nullptr;
}

DeviceMemory& MemoryOf(const Device& device) {
  DeviceMemory* memory = Installed()[static_cast<size_t>(device.kind)].load();
  AD_CHECK(memory != nullptr, kFailedPrecondition,
           "tensors on {} need the {} backend, which this program does not have",
           DeviceName(device), DeviceKindName(device.kind));
  return *memory;
}

}  // namespace autodist::tensor
