#include "runtime/data/idx_reader.h"

#include <gtest/gtest.h>

#include <cmath>

#include "runtime/common/file_io.h"
#include "tests/data/data_test_util.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Shape;
using tensor::Tensor;
using testing::ExpectError;
using testing::Fixture;
using testing::ScratchFile;
using testing::Values;

// The fixtures are written by Python's struct module (big-endian), independently of the reader.
TEST(IdxReaderTest, ReadsEveryElementType) {
  const Tensor u8 = ReadIdx(Fixture("u8.idx"));
  EXPECT_EQ(u8.dtype(), DType::kUInt8);
  EXPECT_EQ(u8.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<uint8_t>(u8), (std::vector<uint8_t>{0, 50, 100, 150, 200, 250}));

  const Tensor i8 = ReadIdx(Fixture("i8.idx"));
  EXPECT_EQ(i8.dtype(), DType::kInt8);
  EXPECT_EQ(Values<int8_t>(i8), (std::vector<int8_t>{-128, -1, 0, 127}));

  // int16 is widened to int32, keeping the sign.
  const Tensor i16 = ReadIdx(Fixture("i16.idx"));
  EXPECT_EQ(i16.dtype(), DType::kInt32);
  EXPECT_EQ(i16.shape(), (Shape{2, 2}));
  EXPECT_EQ(Values<int32_t>(i16), (std::vector<int32_t>{-32768, -2, 300, 32767}));

  const Tensor i32 = ReadIdx(Fixture("i32.idx"));
  EXPECT_EQ(i32.dtype(), DType::kInt32);
  EXPECT_EQ(Values<int32_t>(i32), (std::vector<int32_t>{-2147483647 - 1, 1, 2147483647}));

  const Tensor f32 = ReadIdx(Fixture("f32.idx"));
  EXPECT_EQ(f32.dtype(), DType::kFloat32);
  EXPECT_EQ(Values<float>(f32), (std::vector<float>{1.5F, -0.25F, 1024.0F, -3.0e-3F}));

  const Tensor f64 = ReadIdx(Fixture("f64.idx"));
  EXPECT_EQ(f64.dtype(), DType::kFloat64);
  EXPECT_EQ(Values<double>(f64), (std::vector<double>{1.0 / 3.0, -1e300}));
}

TEST(IdxReaderTest, ReadsGzipByMagicNotByName) {
  const Tensor images = ReadIdx(Fixture("images-idx3-ubyte.gz"));
  EXPECT_EQ(images.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(Values<uint8_t>(images),
            (std::vector<uint8_t>{0, 255, 51, 102, 1, 2, 3, 4, 255, 255, 0, 0}));
  const Tensor labels = ReadIdx(Fixture("labels-idx1-ubyte.gz"));
  EXPECT_EQ(labels.shape(), (Shape{3}));
  EXPECT_EQ(Values<uint8_t>(labels), (std::vector<uint8_t>{9, 0, 3}));

  // The same gzip bytes under a name without .gz, and raw bytes under a .gz name.
  const std::string gz = ReadFileBytes(Fixture("labels-idx1-ubyte.gz"), "fixture");
  EXPECT_EQ(Values<uint8_t>(ReadIdx(ScratchFile("labels.idx", gz))),
            (std::vector<uint8_t>{9, 0, 3}));
  const std::string raw = ReadFileBytes(Fixture("u8.idx"), "fixture");
  EXPECT_EQ(ReadIdx(ScratchFile("u8.idx.gz", raw)).shape(), (Shape{2, 3}));
}

TEST(IdxReaderTest, ReadsConcatenatedGzipMembers) {
  const Tensor images = ReadIdx(Fixture("two_members.idx.gz"));
  EXPECT_EQ(images.shape(), (Shape{3, 2, 2}));
  EXPECT_EQ(Values<uint8_t>(images),
            (std::vector<uint8_t>{0, 255, 51, 102, 1, 2, 3, 4, 255, 255, 0, 0}));
}

TEST(IdxReaderTest, ParsesHandWrittenBytes) {
  // Rank 1, one int32 element 0x01020304, big-endian.
  const std::string bytes("\x00\x00\x0C\x01\x00\x00\x00\x01\x01\x02\x03\x04", 12);
  const Tensor t = ParseIdx(bytes, "inline");
  EXPECT_EQ(t.shape(), (Shape{1}));
  EXPECT_EQ(t.data<int32_t>()[0], 0x01020304);
  // Rank 0: a scalar, one element.
  const Tensor scalar = ParseIdx(std::string("\x00\x00\x08\x00\x2A", 5), "inline");
  EXPECT_EQ(scalar.shape(), (Shape{}));
  EXPECT_EQ(scalar.data<uint8_t>()[0], 42);
  // A zero dimension needs no data.
  const Tensor empty =
      ParseIdx(std::string("\x00\x00\x0D\x02\x00\x00\x00\x00\x00\x00\x00\x05", 12), "inline");
  EXPECT_EQ(empty.shape(), (Shape{0, 5}));
}

TEST(IdxReaderTest, RejectsBadMagicNamingTheFile) {
  const std::string path = ScratchFile("bad_magic.idx", std::string("\x01\x00\x08\x01\x00", 5));
  ExpectError([&] { ReadIdx(path); }, ErrorCode::kInvalidArgument,
              {path, "bad magic", "expected 0x00 0x00 <type> <rank>", "found 0x01 0x00 0x08 0x01"});
  ExpectError([&] { ParseIdx(std::string("\x00\x00\x07\x01", 4), "f.idx"); },
              ErrorCode::kInvalidArgument, {"f.idx", "unknown element type 0x07", "0x08 uint8"});
  ExpectError([&] { ParseIdx(std::string("\x00\x00", 2), "f.idx"); }, ErrorCode::kInvalidArgument,
              {"f.idx", "expected a 4-byte magic number, found 2 bytes"});
  // NPY bytes are not IDX.
  const std::string npy = ReadFileBytes(Fixture("f4.npy"), "fixture");
  ExpectError([&] { ParseIdx(npy, "f4.npy"); }, ErrorCode::kInvalidArgument,
              {"f4.npy", "bad magic", "found 0x93 0x4E"});
}

TEST(IdxReaderTest, RejectsShortHeader) {
  // Rank 3 needs 12 bytes of dimensions; only 5 follow the magic.
  ExpectError([&] { ParseIdx(std::string("\x00\x00\x08\x03\x00\x00\x00\x02\x00", 9), "h.idx"); },
              ErrorCode::kInvalidArgument,
              {"h.idx", "expected 16 header bytes for 3 dimensions", "found 9"});
}

TEST(IdxReaderTest, RejectsTruncatedDataWithExpectedAndFoundBytes) {
  // An MNIST image header [60000, 28, 28] followed by only 1000 bytes.
  std::string bytes("\x00\x00\x08\x03\x00\x00\xEA\x60\x00\x00\x00\x1C\x00\x00\x00\x1C", 16);
  bytes.append(1000, '\x07');
  const std::string path = ScratchFile("images-idx3-ubyte", bytes);
  ExpectError(
      [&] { ReadIdx(path); }, ErrorCode::kInvalidArgument,
      {path, "truncated", "expected 47040000 bytes of data for dims [60000, 28, 28], found 1000"});
  // float64 elements are 8 bytes: [2] needs 16.
  ExpectError(
      [&] {
        ParseIdx(std::string("\x00\x00\x0E\x01\x00\x00\x00\x02", 8) + std::string(9, 'x'), "d");
      },
      ErrorCode::kInvalidArgument, {"expected 16 bytes of data for dims [2], found 9"});
}

TEST(IdxReaderTest, RejectsTrailingBytes) {
  std::string bytes = ReadFileBytes(Fixture("u8.idx"), "fixture") + "xy";
  ExpectError(
      [&] { ParseIdx(bytes, "u8.idx"); }, ErrorCode::kInvalidArgument,
      {"u8.idx", "trailing", "expected 6 bytes of data for dims [2, 3], found 8 (2 extra)"});
}

TEST(IdxReaderTest, RejectsHugeDimsWithoutAllocating) {
  // [0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF] overflows 64 bits.
  std::string bytes("\x00\x00\x0E\x03", 4);
  bytes.append(12, '\xFF');
  ExpectError([&] { ParseIdx(bytes, "huge.idx"); }, ErrorCode::kInvalidArgument,
              {"huge.idx", "more than 2^63 bytes"});
  // [0xFFFFFFFF, 16] float64 is 512 GiB, which fits in 64 bits: plain truncation.
  const std::string big("\x00\x00\x0E\x02\xFF\xFF\xFF\xFF\x00\x00\x00\x10", 12);
  ExpectError([&] { ParseIdx(big, "big.idx"); }, ErrorCode::kInvalidArgument,
              {"big.idx", "truncated", "expected 549755813760 bytes", "found 0"});
}

TEST(IdxReaderTest, RejectsTruncatedGzip) {
  const std::string gz = ReadFileBytes(Fixture("images-idx3-ubyte.gz"), "fixture");
  // Cut inside the deflate stream: no end marker.
  const std::string cut = ScratchFile("cut-idx3-ubyte.gz", gz.substr(0, gz.size() - 12));
  ExpectError([&] { ReadIdx(cut); }, ErrorCode::kInvalidArgument, {cut, "gzip data is truncated"});
  // Only the gzip magic.
  const std::string magic_only = ScratchFile("magic.gz", gz.substr(0, 2));
  ExpectError([&] { ReadIdx(magic_only); }, ErrorCode::kInvalidArgument,
              {magic_only, "gzip data is truncated"});
}

TEST(IdxReaderTest, RejectsCorruptGzip) {
  std::string gz = ReadFileBytes(Fixture("images-idx3-ubyte.gz"), "fixture");
  // Flip a bit of the stored CRC-32 (the 8 trailer bytes are CRC-32 then size).
  gz[gz.size() - 8] = static_cast<char>(gz[gz.size() - 8] ^ 0x01);
  const std::string bad_crc = ScratchFile("bad_crc.gz", gz);
  ExpectError([&] { ReadIdx(bad_crc); }, ErrorCode::kInvalidArgument,
              {bad_crc, "corrupt gzip data", "incorrect data check"});
  // A compression method other than deflate (byte 2 must be 8).
  std::string bad_method = ReadFileBytes(Fixture("images-idx3-ubyte.gz"), "fixture");
  bad_method[2] = 7;
  const std::string path = ScratchFile("bad_method.gz", bad_method);
  ExpectError([&] { ReadIdx(path); }, ErrorCode::kInvalidArgument, {path, "corrupt gzip data"});
}

TEST(IdxReaderTest, RejectsGarbageAfterGzipStream) {
  const std::string gz = ReadFileBytes(Fixture("labels-idx1-ubyte.gz"), "fixture");
  const std::string path = ScratchFile("garbage.gz", gz + "junk");
  ExpectError([&] { ReadIdx(path); }, ErrorCode::kInvalidArgument,
              {path, "4 bytes after the end of the gzip data", "not another gzip member"});
}

TEST(IdxReaderTest, MissingFileIsNotFound) {
  ExpectError([] { ReadIdx("/nonexistent/train-images-idx3-ubyte.gz"); }, ErrorCode::kNotFound,
              {"/nonexistent/train-images-idx3-ubyte.gz"});
}

}  // namespace
}  // namespace autodist::data
