#include "runtime/data/npy_reader.h"

#include <gtest/gtest.h>

#include <cstring>

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

// An NPY 1.0 file with the given header dict text (padded like numpy pads) and payload.
std::string Npy(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + payload;
}

// The fixtures are written by numpy.save (tests/fixtures/data/generate.py).
TEST(NpyReaderTest, ReadsEverySupportedDtype) {
  const Tensor f4 = ReadNpy(Fixture("f4.npy"));
  EXPECT_EQ(f4.dtype(), DType::kFloat32);
  EXPECT_EQ(f4.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values<float>(f4), (std::vector<float>{0.5F, -1.25F, 3.0F, -2.75F, 1024.0F, 0.125F}));

  const Tensor f8 = ReadNpy(Fixture("f8.npy"));
  EXPECT_EQ(f8.dtype(), DType::kFloat64);
  EXPECT_EQ(Values<double>(f8), (std::vector<double>{1.0 / 3.0, -2.5, 1e300}));

  const Tensor i8 = ReadNpy(Fixture("i8.npy"));
  EXPECT_EQ(i8.dtype(), DType::kInt64);
  EXPECT_EQ(Values<int64_t>(i8), (std::vector<int64_t>{-9007199254740993, 0, 9223372036854775807}));

  const Tensor i4 = ReadNpy(Fixture("i4.npy"));
  EXPECT_EQ(i4.dtype(), DType::kInt32);
  EXPECT_EQ(i4.shape(), (Shape{2, 2}));
  EXPECT_EQ(Values<int32_t>(i4), (std::vector<int32_t>{-2147483647 - 1, 7, 2147483647, -1}));

  const Tensor u1 = ReadNpy(Fixture("u1.npy"));
  EXPECT_EQ(u1.dtype(), DType::kUInt8);
  EXPECT_EQ(u1.shape(), (Shape{1, 3}));
  EXPECT_EQ(Values<uint8_t>(u1), (std::vector<uint8_t>{0, 128, 255}));

  const Tensor i1 = ReadNpy(Fixture("i1.npy"));
  EXPECT_EQ(i1.dtype(), DType::kInt8);
  EXPECT_EQ(Values<int8_t>(i1), (std::vector<int8_t>{-128, -1, 127}));

  const Tensor b1 = ReadNpy(Fixture("b1.npy"));
  EXPECT_EQ(b1.dtype(), DType::kBool);
  EXPECT_EQ(Values<bool>(b1), (std::vector<bool>{true, false, true, true}));
}

TEST(NpyReaderTest, ReadsFormatVersions2And3) {
  for (const char* name : {"f4_v2.npy", "f4_v3.npy"}) {
    const std::string bytes = ReadFileBytes(Fixture(name), "fixture");
    ASSERT_EQ(bytes[6], name[4] - '0') << name;  // the version byte numpy wrote
    const Tensor t = ReadNpy(Fixture(name));
    EXPECT_EQ(t.shape(), (Shape{2, 2})) << name;
    EXPECT_EQ(Values<float>(t), (std::vector<float>{1, 2, 3, 4})) << name;
  }
}

TEST(NpyReaderTest, ReadsScalarsEmptyArraysAndNativeOrder) {
  const Tensor scalar = ReadNpy(Fixture("scalar.npy"));
  EXPECT_EQ(scalar.shape(), (Shape{}));
  EXPECT_EQ(scalar.data<float>()[0], 2.5F);
  const Tensor empty = ReadNpy(Fixture("empty.npy"));
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_EQ(empty.numel(), 0);
  const Tensor native = ReadNpy(Fixture("native_i4.npy"));  // descr '=i4'
  EXPECT_EQ(native.dtype(), DType::kInt32);
  EXPECT_EQ(Values<int32_t>(native), (std::vector<int32_t>{-5, 6}));
}

TEST(NpyReaderTest, AcceptsHeaderSpellingsNumpyWrites) {
  // Double quotes, no trailing comma, Python 2 longs, keys in another order, '=' for one byte.
  const Tensor t = ParseNpy(
      Npy(R"({"shape": (2L, 1L), 'fortran_order': False, "descr": '=u1'})", "\x05\x06"), "x");
  EXPECT_EQ(t.shape(), (Shape{2, 1}));
  EXPECT_EQ(Values<uint8_t>(t), (std::vector<uint8_t>{5, 6}));
}

TEST(NpyReaderTest, RejectsFortranOrder) {
  ExpectError([] { ReadNpy(Fixture("fortran.npy")); }, ErrorCode::kInvalidArgument,
              {"fortran.npy", "fortran_order True", "not supported"});
}

TEST(NpyReaderTest, RejectsBigEndian) {
  ExpectError([] { ReadNpy(Fixture("big_endian.npy")); }, ErrorCode::kInvalidArgument,
              {"big_endian.npy", "big-endian dtype '>f4'"});
}

TEST(NpyReaderTest, RejectsUnsupportedDtypes) {
  ExpectError([] { ReadNpy(Fixture("f2.npy")); }, ErrorCode::kInvalidArgument,
              {"f2.npy", "unsupported dtype '<f2'", "<f4, <f8, <i8, <i4, |u1, |i1, |b1"});
  ExpectError([] { ReadNpy(Fixture("u4.npy")); }, ErrorCode::kInvalidArgument,
              {"u4.npy", "unsupported dtype '<u4'"});
  ExpectError([] { ReadNpy(Fixture("structured.npy")); }, ErrorCode::kInvalidArgument,
              {"structured.npy", "structured dtypes are not supported"});
  ExpectError(
      [] {
        ParseNpy(Npy("{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", "abcd"), "x");
      },
      ErrorCode::kInvalidArgument, {"dtype '|f4' needs a byte order"});
}

TEST(NpyReaderTest, RejectsBoolBytesOtherThanZeroAndOne) {
  ExpectError([] { ReadNpy(Fixture("bad_bool.npy")); }, ErrorCode::kInvalidArgument,
              {"bad_bool.npy", "bool element 2 holds byte 2"});
}

TEST(NpyReaderTest, RejectsTruncatedAndTrailingData) {
  const std::string bytes = ReadFileBytes(Fixture("f4.npy"), "fixture");  // 24 data bytes
  const std::string cut = ScratchFile("cut.npy", bytes.substr(0, bytes.size() - 5));
  ExpectError([&] { ReadNpy(cut); }, ErrorCode::kInvalidArgument,
              {cut, "truncated", "expected 24 bytes of data for shape [2, 3], found 19"});
  ExpectError([&] { ParseNpy(bytes + "x", "long.npy"); }, ErrorCode::kInvalidArgument,
              {"long.npy", "trailing", "found 25 (1 extra)"});
  // Cut inside the header and inside the length field.
  ExpectError([&] { ParseNpy(bytes.substr(0, 40), "h.npy"); }, ErrorCode::kInvalidArgument,
              {"h.npy", "truncated: expected a 118-byte header, found 30 bytes"});
  ExpectError([&] { ParseNpy(bytes.substr(0, 9), "l.npy"); }, ErrorCode::kInvalidArgument,
              {"l.npy", "expected a 2-byte header length"});
  ExpectError([&] { ParseNpy(bytes.substr(0, 7), "v.npy"); }, ErrorCode::kInvalidArgument,
              {"v.npy", "expected a 2-byte version"});
}

TEST(NpyReaderTest, RejectsBadMagicAndVersion) {
  ExpectError([] { ParseNpy("PK\x03\x04 zip", "a.npz"); }, ErrorCode::kInvalidArgument,
              {"a.npz", "bad magic"});
  std::string bytes = ReadFileBytes(Fixture("f4.npy"), "fixture");
  bytes[6] = 4;
  ExpectError([&] { ParseNpy(bytes, "v4.npy"); }, ErrorCode::kInvalidArgument,
              {"v4.npy", "unsupported format version 4.0"});
}

TEST(NpyReaderTest, RejectsMalformedHeaders) {
  const auto parse = [](const std::string& dict) { ParseNpy(Npy(dict, ""), "m.npy"); };
  ExpectError([&] { parse("{'descr': '<f4', 'shape': (0,), }"); }, ErrorCode::kInvalidArgument,
              {"m.npy", "must have the keys 'descr', 'fortran_order' and 'shape'"});
  ExpectError([&] { parse("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (0,), }"); },
              ErrorCode::kInvalidArgument, {"m.npy", "expected True or False"});
  ExpectError([&] { parse("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"); },
              ErrorCode::kInvalidArgument, {"m.npy", "expected a non-negative integer"});
  ExpectError([&] { parse("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), 'x': 1}"); },
              ErrorCode::kInvalidArgument, {"m.npy", "unexpected header key 'x'"});
  ExpectError([&] { parse("{'descr': '<f4, 'fortran_order': False"); }, ErrorCode::kInvalidArgument,
              {"m.npy", "malformed header"});
  ExpectError([&] { parse("['descr']"); }, ErrorCode::kInvalidArgument, {"m.npy", "expected '{'"});
  ExpectError([&] { parse("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), } extra"); },
              ErrorCode::kInvalidArgument, {"m.npy", "unexpected text after the header dict"});
  ExpectError(
      [&] { parse("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"); },
      ErrorCode::kInvalidArgument, {"m.npy", "dimension too large"});
  ExpectError(
      [&] { parse("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"); },
      ErrorCode::kInvalidArgument, {"m.npy", "more than 2^63 bytes"});
}

TEST(NpyReaderTest, MissingFileIsNotFound) {
  ExpectError([] { ReadNpy("/nonexistent/x.npy"); }, ErrorCode::kNotFound, {"/nonexistent/x.npy"});
}

}  // namespace
}  // namespace autodist::data
