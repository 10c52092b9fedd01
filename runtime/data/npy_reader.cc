#include "runtime/data/npy_reader.h"

#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::data {
namespace {

using tensor::DType;
using tensor::Tensor;

// NPY stores little-endian data that we copy as is.
static_assert(std::endian::native == std::endian::little, "the NPY reader assumes little-endian");

constexpr std::string_view kMagic = "\x93NUMPY";

// The three header entries numpy writes; the header is a Python literal, parsed just far enough
// for the values numpy.save produces (strings, True/False, tuples of integers).
struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<tensor::Shape> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  NpyHeader Parse() {
    NpyHeader header;
    Expect('{');
    while (!Accept('}')) {
      const std::string key = ParseString();
      Expect(':');
      if (key == "descr") {
        SkipSpace();
        AD_CHECK(pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"'),
                 kInvalidArgument,
                 "NPY file '{}': 'descr' must be a dtype string such as '<f4'; structured dtypes "
                 "are not supported (header: {})",
                 source_, text_);
        header.descr = ParseString();
      } else if (key == "fortran_order") {
        header.fortran_order = ParseBool();
      } else if (key == "shape") {
        header.shape = ParseShape();
      } else {
        Fail(ErrorCode::kInvalidArgument, "NPY file '{}': unexpected header key '{}' (header: {})",
             source_, key, text_);
      }
      if (!Accept(',')) {
        Expect('}');
        break;
      }
    }
    SkipSpace();
    AD_CHECK(pos_ == text_.size(), kInvalidArgument,
             "NPY file '{}': unexpected text after the header dict: {}", source_,
             text_.substr(pos_));
    return header;
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool Accept(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void Expect(char c) {
    AD_CHECK(Accept(c), kInvalidArgument,
             "NPY file '{}': malformed header: expected '{}' at offset {} of {}", source_, c, pos_,
             text_);
  }

  std::string ParseString() {
    SkipSpace();
    AD_CHECK(pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"'), kInvalidArgument,
             "NPY file '{}': malformed header: expected a quoted string at offset {} of {}",
             source_, pos_, text_);
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    AD_CHECK(end != std::string_view::npos, kInvalidArgument,
             "NPY file '{}': malformed header: unterminated string in {}", source_, text_);
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  bool ParseBool() {
    SkipSpace();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w = word;
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    Fail(ErrorCode::kInvalidArgument,
         "NPY file '{}': malformed header: expected True or False at offset {} of {}", source_,
         pos_, text_);
  }

  int64_t ParseDim() {
    SkipSpace();
    int64_t value = 0;
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_++] - '0';
      AD_CHECK(!__builtin_mul_overflow(value, 10, &value) &&
                   !__builtin_add_overflow(value, digit, &value),
               kInvalidArgument, "NPY file '{}': dimension too large in {}", source_, text_);
    }
    AD_CHECK(pos_ > start, kInvalidArgument,
             "NPY file '{}': malformed header: expected a non-negative integer at offset {} of {}",
             source_, start, text_);
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs: (3L, 4L)
    return value;
  }

  tensor::Shape ParseShape() {
    tensor::Shape shape;
    Expect('(');
    while (!Accept(')')) {
      shape.push_back(ParseDim());
      if (!Accept(',')) {
        Expect(')');
        break;
      }
    }
    return shape;
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

struct NpyType {
  DType dtype;
  size_t size;
};

// Maps a descr such as '<f4' to the element type.
NpyType ParseDescr(const std::string& descr, const std::string& source) {
  constexpr const char* kSupported = "<f4, <f8, <i8, <i4, |u1, |i1, |b1";
  AD_CHECK(descr.size() >= 3, kInvalidArgument,
           "NPY file '{}': unsupported dtype '{}' (supported: {})", source, descr, kSupported);
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  std::optional<NpyType> type;
  if (kind == "f4") type = NpyType{DType::kFloat32, 4};
  if (kind == "f8") type = NpyType{DType::kFloat64, 8};
  if (kind == "i8") type = NpyType{DType::kInt64, 8};
  if (kind == "i4") type = NpyType{DType::kInt32, 4};
  if (kind == "u1") type = NpyType{DType::kUInt8, 1};
  if (kind == "i1") type = NpyType{DType::kInt8, 1};
  if (kind == "b1") type = NpyType{DType::kBool, 1};
  AD_CHECK(type.has_value() && (order == '<' || order == '>' || order == '=' || order == '|'),
           kInvalidArgument, "NPY file '{}': unsupported dtype '{}' (supported: {})", source, descr,
           kSupported);
  // Byte order does not apply to one-byte elements (numpy writes '|' for them).
  AD_CHECK(order != '>' || type->size == 1, kInvalidArgument,
           "NPY file '{}': big-endian dtype '{}' is not supported; save the array as '<{}' "
           "(numpy: a.astype(a.dtype.newbyteorder('<')))",
           source, descr, kind);
  AD_CHECK(order != '|' || type->size == 1, kInvalidArgument,
           "NPY file '{}': dtype '{}' needs a byte order ('<' or '=')", source, descr);
  return *type;
}

uint32_t LoadLittleEndian(const char* p, size_t bytes) {
  uint32_t value = 0;
  for (size_t i = bytes; i-- > 0;) value = value << 8 | static_cast<unsigned char>(p[i]);
  return value;
}

}  // namespace

bool IsNpy(std::string_view bytes) { return bytes.substr(0, kMagic.size()) == kMagic; }

Tensor ParseNpy(std::string_view bytes, const std::string& source) {
  AD_CHECK(IsNpy(bytes), kInvalidArgument,
           "NPY file '{}': bad magic: expected the 6 bytes \"\\x93NUMPY\" at the start", source);
  AD_CHECK(bytes.size() >= 8, kInvalidArgument,
           "NPY file '{}': truncated: expected a 2-byte version after the magic, found {} bytes",
           source, bytes.size() - kMagic.size());
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  AD_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, kInvalidArgument,
           "NPY file '{}': unsupported format version {}.{} (supported: 1.0, 2.0, 3.0)", source,
           major, minor);
  // Version 1.0 has a 2-byte header length; 2.0 and 3.0 (UTF-8 header) a 4-byte one.
  const size_t length_bytes = major == 1 ? 2 : 4;
  const size_t header_start = 8 + length_bytes;
  AD_CHECK(bytes.size() >= header_start, kInvalidArgument,
           "NPY file '{}': truncated: expected a {}-byte header length, found {} bytes", source,
           length_bytes, bytes.size() - 8);
  const size_t header_length = LoadLittleEndian(bytes.data() + 8, length_bytes);
  AD_CHECK(bytes.size() - header_start >= header_length, kInvalidArgument,
           "NPY file '{}': truncated: expected a {}-byte header, found {} bytes", source,
           header_length, bytes.size() - header_start);
  const NpyHeader header = HeaderParser(bytes.substr(header_start, header_length), source).Parse();
  AD_CHECK(header.descr && header.fortran_order && header.shape, kInvalidArgument,
           "NPY file '{}': the header must have the keys 'descr', 'fortran_order' and 'shape'",
           source);
  AD_CHECK(!*header.fortran_order, kInvalidArgument,
           "NPY file '{}': fortran_order True (column-major) arrays are not supported; save a "
           "C-ordered array (numpy: np.ascontiguousarray(a))",
           source);
  const NpyType type = ParseDescr(*header.descr, source);

  const tensor::Shape& shape = *header.shape;
  auto expected = static_cast<int64_t>(type.size);
  for (const int64_t dim : shape) {
    AD_CHECK(!__builtin_mul_overflow(expected, dim, &expected), kInvalidArgument,
             "NPY file '{}': shape {} describes more than 2^63 bytes", source,
             tensor::ShapeToString(shape));
  }
  const std::string_view data = bytes.substr(header_start + header_length);
  AD_CHECK(data.size() >= static_cast<size_t>(expected), kInvalidArgument,
           "NPY file '{}' ('{}') is truncated: expected {} bytes of data for shape {}, found {}",
           source, *header.descr, expected, tensor::ShapeToString(shape), data.size());
  AD_CHECK(data.size() == static_cast<size_t>(expected), kInvalidArgument,
           "NPY file '{}' ('{}') has trailing bytes: expected {} bytes of data for shape {}, "
           "found {} ({} extra)",
           source, *header.descr, expected, tensor::ShapeToString(shape), data.size(),
           data.size() - static_cast<size_t>(expected));

  Tensor out(type.dtype, shape);
  if (type.dtype == DType::kBool) {
    // A C++ bool must hold 0 or 1; any other byte would be undefined behaviour to read.
    for (size_t i = 0; i < data.size(); ++i) {
      const auto value = static_cast<unsigned char>(data[i]);
      AD_CHECK(value <= 1, kInvalidArgument,
               "NPY file '{}': bool element {} holds byte {} (expected 0 or 1)", source, i, value);
    }
  }
  if (!data.empty()) std::memcpy(out.raw(), data.data(), data.size());
  return out;
}

Tensor ReadNpy(const std::string& path) { return ParseNpy(ReadFileBytes(path, "NPY"), path); }

}  // namespace autodist::data
