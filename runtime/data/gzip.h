// gzip decompression of whole in-memory files (IDX datasets ship as .gz).
#pragma once

#include <string>
#include <string_view>

namespace autodist::data {

// Whether `bytes` start with the gzip magic number 0x1f 0x8b.
bool IsGzip(std::string_view bytes);

// Decompresses a gzip file held in `bytes`, including files of several concatenated members (what
// `cat a.gz b.gz` produces). Throws InvalidArgument naming `source` for corrupt or truncated data
// and for trailing bytes that are not another gzip member.
std::string Gunzip(std::string_view bytes, const std::string& source);

}  // namespace autodist::data
