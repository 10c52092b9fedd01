#include "runtime/data/idx_reader.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/data/gzip.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Tensor;

struct IdxType {
  const char* name;
  size_t file_bytes;  // bytes per element in the file
  DType dtype;        // element type of the tensor we return
  uint8_t code;       // the third byte of the magic number
};

constexpr std::array<IdxType, 6> kIdxTypes = {{
    {"uint8", 1, DType::kUInt8, 0x08},
    {"int8", 1, DType::kInt8, 0x09},
    {"int16", 2, DType::kInt32, 0x0B},
    {"int32", 4, DType::kInt32, 0x0C},
    {"float32", 4, DType::kFloat32, 0x0D},
    {"float64", 8, DType::kFloat64, 0x0E},
}};

const IdxType* FindType(uint8_t code) {
  for (const IdxType& type : kIdxTypes) {
    if (type.code == code) return &type;
  }
  return nullptr;
}

// Big-endian unsigned integer of N bytes at p.
template <size_t N>
uint64_t LoadBigEndian(const char* p) {
  uint64_t value = 0;
  for (size_t i = 0; i < N; ++i) value = value << 8 | static_cast<unsigned char>(p[i]);
  return value;
}

void DecodeElements(const IdxType& type, const char* in, Tensor& out) {
  const int64_t count = out.numel();
  switch (type.code) {
    case 0x08:
    case 0x09:
      if (count > 0) std::memcpy(out.raw(), in, static_cast<size_t>(count));
      return;
    case 0x0B: {
      auto* data = out.data<int32_t>();
      for (int64_t i = 0; i < count; ++i) {
        data[i] = static_cast<int16_t>(static_cast<uint16_t>(LoadBigEndian<2>(in + 2 * i)));
      }
      return;
    }
    case 0x0C: {
      auto* data = out.data<int32_t>();
      for (int64_t i = 0; i < count; ++i) {
        data[i] = static_cast<int32_t>(static_cast<uint32_t>(LoadBigEndian<4>(in + 4 * i)));
      }
      return;
    }
    case 0x0D: {
      auto* data = out.data<float>();
      for (int64_t i = 0; i < count; ++i) {
        data[i] = std::bit_cast<float>(static_cast<uint32_t>(LoadBigEndian<4>(in + 4 * i)));
      }
      return;
    }
    case 0x0E: {
      auto* data = out.data<double>();
      for (int64_t i = 0; i < count; ++i)
        data[i] = std::bit_cast<double>(LoadBigEndian<8>(in + 8 * i));
      return;
    }
    default:
      Fail(ErrorCode::kInternal, "IDX type 0x{:02X} has no decoder", type.code);
  }
}

}  // namespace

Tensor ParseIdx(std::string_view bytes, const std::string& source) {
  AD_CHECK(bytes.size() >= 4, kInvalidArgument,
           "IDX file '{}': expected a 4-byte magic number, found {} bytes in the file", source,
           bytes.size());
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  AD_CHECK(byte(0) == 0 && byte(1) == 0, kInvalidArgument,
           "IDX file '{}': bad magic number: expected 0x00 0x00 <type> <rank>, found 0x{:02X} "
           "0x{:02X} 0x{:02X} 0x{:02X}",
           source, byte(0), byte(1), byte(2), byte(3));
  const IdxType* type = FindType(byte(2));
  AD_CHECK(type != nullptr, kInvalidArgument,
           "IDX file '{}': unknown element type 0x{:02X} in the magic number (expected 0x08 "
           "uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32 or 0x0E float64)",
           source, byte(2));
  const size_t rank = byte(3);
  const size_t header = 4 + 4 * rank;
  AD_CHECK(bytes.size() >= header, kInvalidArgument,
           "IDX file '{}': expected {} header bytes for {} dimensions, found {}", source, header,
           rank, bytes.size());

  tensor::Shape dims(rank);
  int64_t count = 1;
  bool overflow = false;
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = static_cast<int64_t>(LoadBigEndian<4>(bytes.data() + 4 + 4 * i));
    overflow = overflow || __builtin_mul_overflow(count, dims[i], &count);
  }
  int64_t expected = 0;
  overflow =
      overflow || __builtin_mul_overflow(count, static_cast<int64_t>(type->file_bytes), &expected);
  AD_CHECK(!overflow, kInvalidArgument,
           "IDX file '{}': dims {} of {} describe more than 2^63 bytes of data", source,
           tensor::ShapeToString(dims), type->name);
  const size_t found = bytes.size() - header;
  AD_CHECK(found >= static_cast<size_t>(expected), kInvalidArgument,
           "IDX file '{}' ({}) is truncated: expected {} bytes of data for dims {}, found {}",
           source, type->name, expected, tensor::ShapeToString(dims), found);
  AD_CHECK(found == static_cast<size_t>(expected), kInvalidArgument,
           "IDX file '{}' ({}) has trailing bytes: expected {} bytes of data for dims {}, found "
           "{} ({} extra)",
           source, type->name, expected, tensor::ShapeToString(dims), found,
           found - static_cast<size_t>(expected));

  Tensor out(type->dtype, std::move(dims));
  DecodeElements(*type, bytes.data() + header, out);
  return out;
}

Tensor ReadIdx(const std::string& path) {
  std::string bytes = ReadFileBytes(path, "IDX");
  if (IsGzip(bytes)) bytes = Gunzip(bytes, path);
  return ParseIdx(bytes, path);
}

}  // namespace autodist::data
