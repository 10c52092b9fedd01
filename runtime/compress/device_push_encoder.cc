#include "runtime/compress/device_push_encoder.h"

#include <optional>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/compress/device_registry.h"

namespace autodist::compress {
namespace {

DeviceRegistry<DevicePushStreamFactory>& Registry() {
  // Never destroyed: registrations run when a backend is installed, possibly at static init.
  static auto* registry = new DeviceRegistry<DevicePushStreamFactory>("push encoder");
  return *registry;
}

}  // namespace

void RegisterDevicePushEncoder(CompressorKind kind, tensor::DeviceKind device,
                               DevicePushStreamFactory make) {
  AD_CHECK(device != tensor::DeviceKind::kCpu, kInternal,
           "the CPU's pushes are compressed by the host encoder");
  Registry().Add(kind, device, std::move(make));
}

bool HasDevicePushEncoder(CompressorKind kind, tensor::DeviceKind device) {
  return device != tensor::DeviceKind::kCpu && Registry().Contains(kind, device);
}

std::unique_ptr<DevicePushStream> MakeDevicePushStream(const tensor::Device& device,
                                                       int64_t elements,
                                                       const CompressorOptions& options) {
  const std::optional<DevicePushStreamFactory> make =
      device.kind == tensor::DeviceKind::kCpu ? std::nullopt
                                              : Registry().Find(options.kind, device.kind);
  AD_CHECK(make.has_value(), kFailedPrecondition,
           "{} pushes cannot be compressed on {} devices (they are compressed on the host)",
           CompressorName(options.kind), tensor::DeviceKindName(device.kind));
  return (*make)(device, elements, options);
}

}  // namespace autodist::compress
