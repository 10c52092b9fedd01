#include "runtime/common/error.h"

#include <gtest/gtest.h>

#include <string>

#include "runtime/common/file_io.h"

namespace autodist {
namespace {

TEST(ErrorTest, CheckThrowsWithCodeAndFormattedMessage) {
  const int chunk_size = 0;
  try {
    AD_CHECK(chunk_size >= 1, kInvalidArgument, "chunk_size must be >= 1, got {}", chunk_size);
    FAIL() << "AD_CHECK did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(error.what(), "chunk_size must be >= 1, got 0");
    EXPECT_TRUE(error.IsUserError());
  }
}

TEST(ErrorTest, CheckPassesWhenConditionHolds) {
  EXPECT_NO_THROW(AD_CHECK(1 + 1 == 2, kInternal, "arithmetic broke"));
}

TEST(ErrorTest, InternalErrorsAreNotUserErrors) {
  const Error error(ErrorCode::kInternal, "bug");
  EXPECT_FALSE(error.IsUserError());
  EXPECT_STREQ(ErrorCodeName(error.code()), "Internal");
}

TEST(FileIoTest, MissingFileIsNotFoundAndNamesThePath) {
  try {
    ReadFileBytes("/nonexistent/model.onnx", "model");
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/model.onnx"), std::string::npos);
  }
}

TEST(FileIoTest, DirectoryIsRejected) { EXPECT_THROW(ReadFileBytes("/tmp", "model"), Error); }

TEST(FileIoTest, WriteThenReadRoundTrips) {
  const std::string path = testing::TempDir() + "/file_io_round_trip.bin";
  const std::string bytes("a\0b\xff", 4);
  WriteFileBytes(path, bytes);
  EXPECT_EQ(ReadFileBytes(path, "test"), bytes);
}

TEST(FileIoTest, ReadsLargeAndEmptyFilesWhole) {
  const std::string path = testing::TempDir() + "/file_io_large.bin";
  std::string bytes(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) % 251);
  WriteFileBytes(path, bytes);
  EXPECT_EQ(ReadFileBytes(path, "test"), bytes);
  WriteFileBytes(path, "");
  EXPECT_EQ(ReadFileBytes(path, "test"), "");
}

TEST(FileIoTest, ReadsFilesThatReportNoSize) {
  // procfs files stat as 0 bytes long and still have content.
  const std::string status = ReadFileBytes("/proc/self/status", "test");
  EXPECT_NE(status.find("Name:"), std::string::npos);
}

}  // namespace
}  // namespace autodist
