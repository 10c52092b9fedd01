#include "runtime/data/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "runtime/common/error.h"

namespace autodist::data {
namespace {

// zlib counts in uInt; larger buffers are handed over in pieces of at most this size.
constexpr size_t kMaxChunk = UINT_MAX;
// gzip's window size (15 bits) + 16 selects the gzip wrapper (not zlib's or raw deflate).
constexpr int kGzipWindowBits = 15 + 16;

// Deflate's largest expansion (zlib's technical notes: 1032:1): no stream decompresses to more
// than this many bytes per compressed byte.
constexpr size_t kMaxDeflateRatio = 1032;

// The uncompressed size modulo 2^32 that a gzip member stores in its last four bytes; only a hint
// for reserving the output (wrong for files of several members or of 4 GiB and more), and bounded
// by what the compressed bytes can expand to: the trailer is the file's word, and a damaged one
// asked for 2.5 GB up front (the fuzzer's find).
size_t SizeHint(std::string_view bytes) {
  if (bytes.size() < 18) return 0;
  const auto* tail = reinterpret_cast<const unsigned char*>(bytes.data() + bytes.size() - 4);
  const size_t stored = static_cast<size_t>(tail[0]) | static_cast<size_t>(tail[1]) << 8 |
                        static_cast<size_t>(tail[2]) << 16 | static_cast<size_t>(tail[3]) << 24;
  return std::min(stored, bytes.size() * kMaxDeflateRatio);
}

// Owns a z_stream so that every exit path releases zlib's state.
class Inflater {
 public:
  explicit Inflater(const std::string& source) {
    AD_CHECK(inflateInit2(&stream_, kGzipWindowBits) == Z_OK, kInternal,
             "cannot initialize zlib to decompress '{}'", source);
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

}  // namespace

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string Gunzip(std::string_view bytes, const std::string& source) {
  AD_CHECK(IsGzip(bytes), kInvalidArgument, "'{}' is not gzip data (no 0x1f 0x8b magic)", source);
  Inflater inflater(source);
  z_stream& stream = inflater.stream();
  std::string out(std::max<size_t>({SizeHint(bytes), bytes.size(), 4096}), '\0');
  size_t in_pos = 0;
  size_t out_pos = 0;
  while (true) {
    if (out_pos == out.size()) out.resize(out.size() * 2);
    const size_t in_chunk = std::min(bytes.size() - in_pos, kMaxChunk);
    const size_t out_chunk = std::min(out.size() - out_pos, kMaxChunk);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + in_pos));
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + out_pos);
    stream.avail_out = static_cast<uInt>(out_chunk);
    const int rc = inflate(&stream, Z_NO_FLUSH);
    in_pos += in_chunk - stream.avail_in;
    out_pos += out_chunk - stream.avail_out;
    if (rc == Z_STREAM_END) {
      if (in_pos == bytes.size()) break;
      const std::string_view rest = bytes.substr(in_pos);
      AD_CHECK(IsGzip(rest), kInvalidArgument,
               "'{}': {} bytes after the end of the gzip data at offset {} are not another gzip "
               "member",
               source, rest.size(), in_pos);
      AD_CHECK(inflateReset(&stream) == Z_OK, kInternal, "cannot reset zlib for '{}'", source);
      continue;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) {
      // No progress possible with output space left means the input ran out mid-stream.
      AD_CHECK(in_pos < bytes.size() || out_pos == out.size(), kInvalidArgument,
               "'{}': gzip data is truncated: the stream ends after {} compressed bytes without "
               "its end marker ({} bytes decompressed so far)",
               source, bytes.size(), out_pos);
      continue;
    }
    Fail(ErrorCode::kInvalidArgument, "'{}': corrupt gzip data near compressed byte {}: {}", source,
         in_pos, stream.msg != nullptr ? stream.msg : zError(rc));
  }
  out.resize(out_pos);
  return out;
}

}  // namespace autodist::data
