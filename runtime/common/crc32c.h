// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI (RFC 3720),
// TFRecord and our checkpoints. Debian 12 packages no CRC-32C library for C++ (Abseil's is newer
// than its libabsl), so it is written here: the SSE4.2 instruction where the CPU has it, a
// slicing table elsewhere; both give the same values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace autodist {

// Extends `crc` (the value returned for the bytes before; 0 to start) over `size` bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

// The table version alone, whatever the CPU (tests compare the two).
uint32_t Crc32cExtendPortable(uint32_t crc, const void* data, size_t size);

inline uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

}  // namespace autodist
