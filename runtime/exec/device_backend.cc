#include "runtime/exec/device_backend.h"

#include <map>
#include <mutex>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::exec {
namespace {

struct Backends {
  std::mutex mutex;
  std::map<tensor::DeviceKind, DeviceBackendInstaller> installers;
};

Backends& Registered() {
  static auto* backends = new Backends();  // never destroyed: registrations run at static init
  return *backends;
}

}  // namespace

void RegisterDeviceBackend(tensor::DeviceKind kind, DeviceBackendInstaller installer) {
  AD_CHECK(kind != tensor::DeviceKind::kCpu, kInternal, "the CPU needs no device backend");
  Backends& backends = Registered();
  const std::lock_guard lock(backends.mutex);
  const bool added = backends.installers.emplace(kind, std::move(installer)).second;
  AD_CHECK(added, kInternal, "a second {} device backend was registered",
           tensor::DeviceKindName(kind));
}

std::string UseDevices(tensor::DeviceKind kind, int count, std::string_view field) {
  if (kind == tensor::DeviceKind::kCpu) return "";
  AD_CHECK(count >= 1, kInvalidArgument, "{}: at least 1 {} device is needed, got {}", field,
           tensor::DeviceKindName(kind), count);
  DeviceBackendInstaller installer;
  {
    Backends& backends = Registered();
    const std::lock_guard lock(backends.mutex);
    const auto it = backends.installers.find(kind);
    AD_CHECK(it != backends.installers.end(), kFailedPrecondition,
             "{}: this program was built without the {} backend (no CUDA toolkit at build time, "
             "or -DAUTODIST_CUDA=OFF); docs/gpu.md says how to build it",
             field, tensor::DeviceKindName(kind));
    installer = it->second;
  }
  return installer(count, field);
}

}  // namespace autodist::exec
