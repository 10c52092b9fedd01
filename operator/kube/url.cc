#include "operator/kube/url.h"

#include <cctype>

namespace autodist::kube {

std::string PercentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xF];
    }
  }
  return out;
}

Query& Query::Add(const std::string& key, const std::string& value) {
  if (!value.empty()) pairs_.emplace_back(key, value);
  return *this;
}

std::string Query::str() const {
  std::string out;
  for (const auto& [key, value] : pairs_) {
    out += out.empty() ? '?' : '&';
    out += PercentEncode(key) + "=" + PercentEncode(value);
  }
  return out;
}

}  // namespace autodist::kube
