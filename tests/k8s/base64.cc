#include "tests/k8s/base64.h"

namespace autodist::k8s {
namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string Base64Encode(const std::string& data) {
  std::string out;
  unsigned value = 0;
  int bits = 0;
  for (unsigned char c : data) {
    value = (value << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(value >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kAlphabet[(value << (6 - bits)) & 0x3f];
  while (out.size() % 4 != 0) out += '=';
  return out;
}

std::string Base64Decode(const std::string& text) {
  std::string out;
  unsigned value = 0;
  int bits = 0;
  for (char c : text) {
    const char* at = std::char_traits<char>::find(kAlphabet, 64, c);
    if (at == nullptr) break;
    value = (value << 6) | static_cast<unsigned>(at - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace autodist::k8s
