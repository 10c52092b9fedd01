// The optimizers of variables on CUDA devices, behind the CPU optimizers' interface
// (optim::Optimizer), so that the trainer applies either kind the same way: ApplyAll updates a
// step's variables in one fused launch (fused_optimizer.h) on the GPU's tensor stream.
#pragma once

namespace autodist::gpu {

// Makes optim::MakeOptimizer(options, Device::Cuda(i)) return the fused optimizer of GPU i
// (optim::InstallDeviceOptimizers); safe to call more than once.
void InstallCudaOptimizers();

}  // namespace autodist::gpu
