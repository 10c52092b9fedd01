// IEEE 754 binary16 ("half", float16) conversions, shared by everything that sends or reads
// float16: the compressors (runtime/compress), the communicators that sum float16 buffers, and
// the wire format's decoder (runtime/rpc). The scalar conversions are bit manipulation,
// so the result is the same on every compiler and CPU; the bulk ones use F16C where present,
// which gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace autodist::tensor {

// float32 -> float16 bits, as a hardware cast does: round to nearest, ties to even; magnitudes
// from 65520 (the midpoint between the largest half, 65504, and 2^16) up overflow to infinity;
// values below 2^-14 become subnormal halves (down to 2^-24) and those at most 2^-25 become a
// signed zero; NaN stays NaN (quiet, payload truncated).
uint16_t FloatToHalf(float value);

// float16 bits -> float32 (exact: every half is a float).
float HalfToFloat(uint16_t half);

void FloatsToHalves(const float* in, size_t count, uint16_t* out);
void HalvesToFloats(const uint16_t* in, size_t count, float* out);

// In place: sum[i] = half(float(sum[i]) + float(addend[i])): one float16 addition rounded once,
// what a communicator does when it adds a peer's float16 buffer into its own.
void AddHalves(uint16_t* sum, const uint16_t* addend, size_t count);

}  // namespace autodist::tensor
