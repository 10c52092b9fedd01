// float16 compression on the device, for the Horovod compressors of GPU workers: the CPU's
// formulas (runtime/compress/error_feedback.h, runtime/tensor/float16.h) element for element,
// the same bits for every number (a NaN's sign and payload may differ), each direction one pass
// over memory, queued on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace autodist::gpu {

// out = half(gradient), rounded to nearest, ties to even. With a residual (error feedback):
//   g' = residual + gradient;  out = half(g');  residual = g' - float(out)
// and a residual of 0 where a finite g' overflowed to an infinity, as on the CPU. All pointers
// on the current GPU; `residual` may be null (no error feedback).
void FloatsToHalvesOnDevice(const float* gradient, float* residual, uint16_t* out, size_t count,
                            cudaStream_t stream);

// out = float(in): exact.
void HalvesToFloatsOnDevice(const uint16_t* in, float* out, size_t count, cudaStream_t stream);

}  // namespace autodist::gpu
