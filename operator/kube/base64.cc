#include "operator/kube/base64.h"

#include <cctype>

namespace autodist::kube {
namespace {

int Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view text) {
  std::string out;
  unsigned bits = 0;
  int nbits = 0;
  int padding = 0;
  int symbols = 0;
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) continue;
    if (c == '=') {
      ++padding;
      ++symbols;
      continue;
    }
    const int v = Value(c);
    if (v < 0 || padding > 0) return std::nullopt;  // a bad symbol, or data after padding
    ++symbols;
    bits = (bits << 6) | static_cast<unsigned>(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out += static_cast<char>((bits >> nbits) & 0xFF);
    }
  }
  if (symbols % 4 != 0 || padding > 2) return std::nullopt;
  return out;
}

}  // namespace autodist::kube
