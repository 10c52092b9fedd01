#include "runtime/common/crc32c.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace autodist {
namespace {

// RFC 3720, appendix B.4: CRC-32C of 32-byte iSCSI test patterns.
TEST(Crc32c, Rfc3720Vectors) {
  std::array<uint8_t, 32> bytes{};
  bytes.fill(0x00);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x8A9136AAU);
  bytes.fill(0xFF);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x62A8AB43U);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x46DD794EU);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x113FDB5CU);
}

TEST(Crc32c, CheckValueOfTheCatalogue) {
  const std::string digits = "123456789";
  EXPECT_EQ(Crc32c(digits.data(), digits.size()), 0xE3069283U);
  EXPECT_EQ(Crc32c(nullptr, 0), 0U);
}

TEST(Crc32c, ExtendingPieceByPieceEqualsTheWhole) {
  std::vector<uint8_t> bytes(10007);
  std::mt19937 rng(7);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  const uint32_t whole = Crc32c(bytes.data(), bytes.size());
  for (const size_t cut :
       {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{4096}, size_t{10006}}) {
    const uint32_t head = Crc32c(bytes.data(), cut);
    EXPECT_EQ(Crc32cExtend(head, bytes.data() + cut, bytes.size() - cut), whole) << cut;
  }
}

TEST(Crc32c, HardwareAndTableAgreeAtEveryLengthAndAlignment) {
  std::vector<uint8_t> bytes(300);
  std::mt19937 rng(11);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t size = 0; size + offset <= bytes.size(); size += 13) {
      EXPECT_EQ(Crc32cExtend(5, bytes.data() + offset, size),
                Crc32cExtendPortable(5, bytes.data() + offset, size))
          << offset << " " << size;
    }
  }
}

}  // namespace
}  // namespace autodist
