// The arithmetic a session's kernels use for matrix products and convolutions: fp32 (IEEE single
// precision throughout, the CPU's and the default), tf32 (the GPU's tensor cores multiply with
// 10-bit mantissas and add in fp32, as PyTorch's allow_tf32) or bf16 (mixed precision: the
// products' operands are rounded to bfloat16 on the tensor cores and accumulated in fp32, while
// weights, activations, gradients, reductions and the optimizer stay fp32). Kernels read it from
// their NodeInfo; the CPU computes fp32 only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace autodist::ops {

enum class Precision : uint8_t { kFp32, kTf32, kBf16 };

// "fp32", "tf32", "bf16".
std::string_view PrecisionName(Precision precision);

// The precision named `text`, or nullopt.
std::optional<Precision> FindPrecision(std::string_view text);
// Why `text` names no precision: the accepted names.
std::string UnknownPrecision(std::string_view text);
// The precision named `text`; throws InvalidArgument naming `field` otherwise.
Precision ParsePrecision(std::string_view text, std::string_view field);

}  // namespace autodist::ops
