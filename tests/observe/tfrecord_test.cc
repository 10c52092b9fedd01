#include "runtime/observe/tfrecord.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::observe {
namespace {

using autodist::testing::ErrorOf;

uint64_t U64At(const std::string& bytes, size_t offset) {
  uint64_t value;
  std::memcpy(&value, bytes.data() + offset, sizeof(value));
  return value;
}

uint32_t U32At(const std::string& bytes, size_t offset) {
  uint32_t value;
  std::memcpy(&value, bytes.data() + offset, sizeof(value));
  return value;
}

// The expected CRCs come from a bit-at-a-time CRC-32C written apart from ours (in Python, checked
// on "123456789" -> 0xe3069283), then masked as TFRecord masks them.
TEST(TfRecordTest, RecordLayoutAndMaskedCrcs) {
  const std::string record = FrameRecord("hello");
  ASSERT_EQ(record.size(), 8u + 4u + 5u + 4u);
  EXPECT_EQ(U64At(record, 0), 5u);
  EXPECT_EQ(U32At(record, 8), 0x3e04b2eaU);
  EXPECT_EQ(record.substr(12, 5), "hello");
  EXPECT_EQ(U32At(record, 17), 0x191c1fbbU);
  EXPECT_EQ(MaskedCrc32c("hello"), 0x191c1fbbU);
}

TEST(TfRecordTest, RecordsRoundTripInOrder) {
  const std::string empty;
  const std::string binary("a\0b\xff", 4);
  const std::string bytes = FrameRecord("first") + FrameRecord(empty) + FrameRecord(binary);
  const auto records = UnframeRecords(bytes, "test", false);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0], "first");
  EXPECT_EQ(records[1], empty);
  EXPECT_EQ(records[2], binary);
  EXPECT_TRUE(UnframeRecords("", "test", false).empty());
}

TEST(TfRecordTest, DamagedDataNamesTheSourceAndOffset) {
  std::string bytes = FrameRecord("first") + FrameRecord("second");
  const size_t second = FrameRecord("first").size();
  bytes[second + 12] ^= 0x01;  // a data byte of the second record
  const Error error = ErrorOf([&] { UnframeRecords(bytes, "events.x", true); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  const std::string message = error.what();
  EXPECT_NE(message.find("events.x"), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("byte {}", second)), std::string::npos) << message;
  EXPECT_NE(message.find("data whose CRC does not match"), std::string::npos) << message;
}

TEST(TfRecordTest, DamagedLengthIsNotReadAsALength) {
  std::string bytes = FrameRecord("first");
  bytes[0] = 0x7f;  // a huge length whose CRC no longer matches
  const std::string message = ErrorOf([&] { UnframeRecords(bytes, "f", true); }).what();
  EXPECT_NE(message.find("length whose CRC does not match"), std::string::npos) << message;
}

TEST(TfRecordTest, TornTailIsQuietOnlyWhenAllowed) {
  const std::string whole = FrameRecord("first");
  const std::string torn = whole + FrameRecord("second").substr(0, 15);
  const auto records = UnframeRecords(torn, "f", true);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], "first");
  const std::string message = ErrorOf([&] { UnframeRecords(torn, "f", false); }).what();
  EXPECT_NE(message.find(fmt::format("byte {} is cut short", whole.size())), std::string::npos)
      << message;
  // Fewer bytes than a length header.
  EXPECT_EQ(UnframeRecords(whole + "abc", "f", true).size(), 1u);
  EXPECT_THROW(UnframeRecords(whole + "abc", "f", false), Error);
}

}  // namespace
}  // namespace autodist::observe
