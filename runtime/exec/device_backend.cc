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
  std::map<tensor::DeviceKind, DeviceIdentifier> identifiers;
};

Backends& Registered() {
  static auto* backends = new Backends();  // never destroyed: registrations run at static init
  return *backends;
}

// Registers `value` for `kind` in the registry `field` of the backends; `what` names it in errors.
template <typename Value>
void Add(std::map<tensor::DeviceKind, Value> Backends::*field, tensor::DeviceKind kind, Value value,
         const char* what) {
  AD_CHECK(kind != tensor::DeviceKind::kCpu, kInternal, "the CPU needs no {}", what);
  Backends& backends = Registered();
  const std::lock_guard lock(backends.mutex);
  const bool added = (backends.*field).emplace(kind, std::move(value)).second;
  AD_CHECK(added, kInternal, "a second {} {} was registered", tensor::DeviceKindName(kind), what);
}

}  // namespace

void RegisterDeviceBackend(tensor::DeviceKind kind, DeviceBackendInstaller installer) {
  Add(&Backends::installers, kind, std::move(installer), "device backend");
}

void RegisterDeviceIdentifier(tensor::DeviceKind kind, DeviceIdentifier identifier) {
  Add(&Backends::identifiers, kind, std::move(identifier), "device identifier");
}

std::string DeviceIdentity(const tensor::Device& device) {
  if (device.is_cpu()) return "cpu";
  DeviceIdentifier identifier;
  {
    Backends& backends = Registered();
    const std::lock_guard lock(backends.mutex);
    const auto it = backends.identifiers.find(device.kind);
    AD_CHECK(it != backends.identifiers.end(), kFailedPrecondition,
             "{}: this program was built without the {} backend", tensor::DeviceName(device),
             tensor::DeviceKindName(device.kind));
    identifier = it->second;
  }
  return identifier(device.index);
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
