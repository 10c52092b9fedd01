// Whether a step's gradients are finite, checked where they are. On the CPU each element is
// looked at. On a device the check stays there: each gradient adds sum(g * 0) (zero when every
// element is finite, NaN otherwise, whatever the magnitudes) into one scalar on the device, and
// the step reads that one value, so it waits for the device once instead of copying every
// gradient to the host. The op kernels of the device's backend do the arithmetic (Mul,
// ReduceSum, Add), so this module names no device library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/exec/executor.h"
#include "runtime/exec/standalone_kernel.h"

namespace autodist::exec {

// Every element of `gradient` (its values, when sparse) finite; read on the host.
bool GradientFiniteOnHost(const Gradient& gradient);

// Throws FailedPrecondition "step <step>: training diverged: <what>; lower the learning rate or
// check the data": what a worker whose gradient or loss is not finite fails with (`step` counts
// from 1), wherever it is found.
[[noreturn]] void FailDiverged(int64_t step, const std::string& what);

class DeviceFiniteCheck {
 public:
  // For gradients on `device` (not the CPU); the kernels come from its backend's registry.
  explicit DeviceFiniteCheck(const tensor::Device& device);
  ~DeviceFiniteCheck();
  DeviceFiniteCheck(const DeviceFiniteCheck&) = delete;
  DeviceFiniteCheck& operator=(const DeviceFiniteCheck&) = delete;

  // Queues `gradient`'s check into the step's.
  void Add(const Gradient& gradient);
  // Whether every gradient added since the last call was finite (true with none); waits for the
  // device and starts over.
  bool TakeAllFinite();

 private:
  StandaloneKernel multiply_;
  StandaloneKernel reduce_;
  StandaloneKernel add_;
  Tensor zero_;   // a float scalar 0 on the device
  Tensor total_;  // the step's sum so far; undefined before the first Add
};

}  // namespace autodist::exec
