#include "runtime/common/base64.h"

#include <array>
#include <cctype>
#include <cstdint>

namespace autodist {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> DecodeBase64(std::string_view input, Base64Whitespace whitespace) {
  std::string compact;
  if (whitespace == Base64Whitespace::kSkip) {
    for (const char c : input) {
      if (std::isspace(static_cast<unsigned char>(c)) == 0) compact += c;
    }
    input = compact;
  }
  const std::string_view text = input;
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t at = 0; at < text.size(); at += 4) {
    const bool last = at + 4 == text.size();
    std::array<int, 4> values{};
    int padding = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text[at + i];
      // Padding only at the end of the last quantum, never in its first two characters.
      if (c == '=' && last && i >= 2 && (i == 3 || text[at + 3] == '=')) {
        ++padding;
        values[i] = 0;
        continue;
      }
      values[i] = Value(c);
      if (values[i] < 0 || padding > 0) return std::nullopt;
    }
    const uint32_t triple =
        (static_cast<uint32_t>(values[0]) << 18) | (static_cast<uint32_t>(values[1]) << 12) |
        (static_cast<uint32_t>(values[2]) << 6) | static_cast<uint32_t>(values[3]);
    out.push_back(static_cast<char>((triple >> 16) & 0xFF));
    if (padding < 2) out.push_back(static_cast<char>((triple >> 8) & 0xFF));
    if (padding < 1) out.push_back(static_cast<char>(triple & 0xFF));
  }
  return out;
}

std::string EncodeBase64(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t at = 0; at < bytes.size(); at += 3) {
    const size_t left = bytes.size() - at;
    uint32_t triple = static_cast<uint32_t>(static_cast<unsigned char>(bytes[at])) << 16;
    if (left > 1) triple |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 8;
    if (left > 2) triple |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 2]));
    out.push_back(kAlphabet[(triple >> 18) & 0x3F]);
    out.push_back(kAlphabet[(triple >> 12) & 0x3F]);
    out.push_back(left > 1 ? kAlphabet[(triple >> 6) & 0x3F] : '=');
    out.push_back(left > 2 ? kAlphabet[triple & 0x3F] : '=');
  }
  return out;
}

}  // namespace autodist
