#include "runtime/data/array_reader.h"

#include <gtest/gtest.h>

#include "runtime/common/file_io.h"
#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Shape;
using testing::ExpectError;
using testing::Fixture;
using testing::ScratchFile;

TEST(ArrayReaderTest, DispatchesOnMagicBytes) {
  EXPECT_EQ(ReadArray(Fixture("f4.npy")).shape(), (Shape{2, 3}));
  EXPECT_EQ(ReadArray(Fixture("u8.idx")).dtype(), DType::kUInt8);
  EXPECT_EQ(ReadArray(Fixture("images-idx3-ubyte.gz")).shape(), (Shape{3, 2, 2}));
  // Names that say nothing: the magic decides.
  const std::string npy = ScratchFile("array.bin", ReadFileBytes(Fixture("i4.npy"), "fixture"));
  EXPECT_EQ(ReadArray(npy).dtype(), DType::kInt32);
  const std::string idx = ScratchFile("other.bin", ReadFileBytes(Fixture("f64.idx"), "fixture"));
  EXPECT_EQ(ReadArray(idx).dtype(), DType::kFloat64);
}

TEST(ArrayReaderTest, ReportsBadFilesInTheFormatTheNameClaims) {
  const std::string npy =
      ScratchFile("broken.npy", std::string("\x00\x00\x08\x01\x00\x00\x00\x00", 8));
  ExpectError([&] { ReadArray(npy); }, ErrorCode::kInvalidArgument, {npy, "NPY file", "bad magic"});
  const std::string idx = ScratchFile("broken-idx1-ubyte", "hello");
  ExpectError([&] { ReadArray(idx); }, ErrorCode::kInvalidArgument, {idx, "IDX file", "bad magic"});
}

TEST(ArrayReaderTest, RejectsUnknownFormats) {
  const std::string csv = ScratchFile("data.csv", "1,2,3\n");
  ExpectError([&] { ReadArray(csv); }, ErrorCode::kInvalidArgument,
              {csv, "neither NPY", "nor IDX", ".npy, .idx, *-ubyte or .gz"});
  ExpectError([] { ReadArray("/nonexistent/data.npy"); }, ErrorCode::kNotFound,
              {"/nonexistent/data.npy"});
}

}  // namespace
}  // namespace autodist::data
