// Where a process finds the backend of a kind of device before it trains there: the backend
// registers an installer (gpu/backend registers CUDA's when the binary links it), and a program
// asks for `count` devices of a kind with the flag or field that asked, so that a missing backend,
// driver or device is an error naming them, never a silent CPU run. This module names no device
// library.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "runtime/tensor/device.h"

namespace autodist::exec {

// Checks that the machine has `count` devices of its kind (throwing FailedPrecondition naming
// `field` and what it found otherwise), installs what tensors and optimizers on them need, and
// describes the devices for logs.
using DeviceBackendInstaller = std::function<std::string(int count, std::string_view field)>;

// Adds the backend of `kind` (not the CPU); a second registration of a kind is kInternal.
void RegisterDeviceBackend(tensor::DeviceKind kind, DeviceBackendInstaller installer);

// What tells device `index` of a kind apart from every other device of the machine (CUDA: its
// PCI bus id, whatever CUDA_VISIBLE_DEVICES renumbers), registered by the backend beside its
// installer: NCCL refuses two ranks on one device, so a job compares its ranks' devices before
// it asks for an NCCL communicator.
using DeviceIdentifier = std::function<std::string(int index)>;

// Adds the identifier of `kind` (not the CPU); a second registration of a kind is kInternal.
void RegisterDeviceIdentifier(tensor::DeviceKind kind, DeviceIdentifier identifier);

// `device`'s identity on this machine: "cpu" for the CPU, the backend's identifier otherwise.
// Throws FailedPrecondition when this program was built without that backend.
std::string DeviceIdentity(const tensor::Device& device);

// Prepares this process to use devices 0 .. count - 1 of `kind`: nothing for the CPU; the kind's
// installer otherwise. Throws FailedPrecondition naming `field` when this program was built
// without that backend. Returns the installer's description ("" for the CPU).
std::string UseDevices(tensor::DeviceKind kind, int count, std::string_view field);

}  // namespace autodist::exec
