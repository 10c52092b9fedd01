#include "runtime/observe/tfrecord.h"

#include <array>
#include <bit>
#include <cstring>

#include "runtime/common/crc32c.h"
#include "runtime/common/error.h"

namespace autodist::observe {
namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8U;
constexpr size_t kHeaderBytes = sizeof(uint64_t) + sizeof(uint32_t);
constexpr size_t kFooterBytes = sizeof(uint32_t);

// The framing is little-endian, as are the machines we build for (x86-64, aarch64): the bytes
// are the integers' own.
static_assert(std::endian::native == std::endian::little, "TFRecord framing assumes little-endian");

template <typename T>
void Append(std::string& out, T value) {
  std::array<char, sizeof(T)> bytes{};
  std::memcpy(bytes.data(), &value, sizeof(T));
  out.append(bytes.data(), bytes.size());
}

template <typename T>
T Load(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

}  // namespace

uint32_t MaskedCrc32c(std::string_view bytes) {
  const uint32_t crc = Crc32c(bytes.data(), bytes.size());
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

std::string FrameRecord(std::string_view data) {
  std::string record;
  record.reserve(kHeaderBytes + data.size() + kFooterBytes);
  Append<uint64_t>(record, data.size());
  Append<uint32_t>(record, MaskedCrc32c(std::string_view(record.data(), sizeof(uint64_t))));
  record.append(data);
  Append<uint32_t>(record, MaskedCrc32c(data));
  return record;
}

std::vector<std::string> UnframeRecords(std::string_view bytes, const std::string& source,
                                        bool allow_torn_tail) {
  std::vector<std::string> records;
  size_t offset = 0;
  while (offset < bytes.size()) {
    const size_t left = bytes.size() - offset;
    const auto torn = [&](const char* what) {
      if (allow_torn_tail) return;
      Fail(ErrorCode::kInvalidArgument,
           "{}: the record at byte {} is cut short ({}; {} bytes left in the file)", source, offset,
           what, left);
    };
    if (left < kHeaderBytes) {
      torn("no whole length header");
      break;
    }
    const char* at = bytes.data() + offset;
    const auto length = Load<uint64_t>(at);
    AD_CHECK(Load<uint32_t>(at + sizeof(uint64_t)) ==
                 MaskedCrc32c(std::string_view(at, sizeof(uint64_t))),
             kInvalidArgument,
             "{}: the record at byte {} has a length whose CRC does not match: not a TFRecord "
             "file, or a damaged one",
             source, offset);
    if (length > left - kHeaderBytes || left - kHeaderBytes - length < kFooterBytes) {
      torn("its data or data CRC is missing");
      break;
    }
    const std::string_view data(at + kHeaderBytes, length);
    AD_CHECK(Load<uint32_t>(at + kHeaderBytes + length) == MaskedCrc32c(data), kInvalidArgument,
             "{}: the record at byte {} ({} bytes) has data whose CRC does not match: the file "
             "is damaged",
             source, offset, length);
    records.emplace_back(data);
    offset += kHeaderBytes + length + kFooterBytes;
  }
  return records;
}

}  // namespace autodist::observe
