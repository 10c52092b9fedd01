#include "runtime/job/k8s_syntax.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace autodist::job {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// [a-z0-9]([-a-z0-9]*[a-z0-9])? of at most `max_length` characters.
bool IsLowerLabel(std::string_view text, size_t max_length) {
  if (text.empty() || text.size() > max_length) return false;
  if (!IsLowerAlnum(text.front()) || !IsLowerAlnum(text.back())) return false;
  return std::ranges::all_of(text, [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] of at most 63 characters.
bool IsName(std::string_view text) {
  if (text.empty() || text.size() > 63) return false;
  if (!IsAlnum(text.front()) || !IsAlnum(text.back())) return false;
  return std::ranges::all_of(text,
                             [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsSubdomain(std::string_view text) {
  if (text.empty() || text.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    const std::string_view label =
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!IsLowerLabel(label, 63)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// Consumes digits; returns how many.
size_t Digits(std::string_view text, size_t& position) {
  const size_t start = position;
  while (position < text.size() && IsDigit(text[position])) ++position;
  return position - start;
}

bool IsQuantitySuffix(std::string_view suffix) {
  static constexpr std::array<std::string_view, 14> kSuffixes = {
      "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E"};
  for (const std::string_view known : kSuffixes) {
    if (suffix == known) return true;
  }
  // Decimal exponent: e or E, then an optionally signed integer.
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    size_t position = 1;
    if (suffix[position] == '+' || suffix[position] == '-') ++position;
    return Digits(suffix, position) > 0 && position == suffix.size();
  }
  return false;
}

}  // namespace

bool IsDns1035Label(const std::string& text) {
  return IsLowerLabel(text, 63) && text.front() >= 'a' && text.front() <= 'z';
}

bool IsDns1123Label(const std::string& text) { return IsLowerLabel(text, 63); }

bool IsDns1123Subdomain(const std::string& text) { return IsSubdomain(text); }

bool IsConfigMapKey(const std::string& text) {
  if (text.empty() || text.size() > 253 || text == "." || text == "..") return false;
  return std::ranges::all_of(text,
                             [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsQualifiedName(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return IsName(text);
  const std::string_view view(text);
  return IsSubdomain(view.substr(0, slash)) && IsName(view.substr(slash + 1));
}

bool IsLabelValue(const std::string& text) { return text.empty() || IsName(text); }

bool IsResourceQuantity(const std::string& text) {
  const std::string_view view(text);
  size_t position = 0;
  if (position < view.size() && view[position] == '+') ++position;
  size_t digits = Digits(view, position);
  if (position < view.size() && view[position] == '.') {
    ++position;
    digits += Digits(view, position);
  }
  return digits > 0 && IsQuantitySuffix(view.substr(position));
}

}  // namespace autodist::job
