#include "runtime/config/option_map.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "runtime/common/error.h"

namespace autodist::config {

std::string SnakeCaseKey(std::string_view key) {
  std::string out;
  for (const char c : key) {
    if (std::isupper(static_cast<unsigned char>(c)) != 0) {
      if (!out.empty() && out.back() != '_') out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c == '-' ? '_' : c;
    }
  }
  return out;
}

std::string Lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view TrimSpace(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())) != 0) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  return text;
}

std::optional<double> ParseFiniteNumber(std::string_view text) {
  const std::string_view trimmed = TrimSpace(text);
  double value = 0;
  const char* last = trimmed.data() + trimmed.size();
  const auto [ptr, ec] = std::from_chars(trimmed.data(), last, value);
  if (trimmed.empty() || ec != std::errc() || ptr != last || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

OptionMap::OptionMap(std::string owner, const std::map<std::string, std::string>& options)
    : owner_(std::move(owner)) {
  for (const auto& [key, value] : options) {
    const std::string normalized = SnakeCaseKey(key);
    const auto [it, inserted] = written_.emplace(normalized, key);
    AD_CHECK(inserted, kInvalidArgument, "{}: option '{}' is given twice (as '{}' and '{}')",
             owner_, normalized, it->second, key);
    values_.emplace(normalized, value);
  }
}

bool OptionMap::Has(const std::string& key) const { return values_.contains(key); }

const std::string* OptionMap::Find(const std::string& key) {
  read_.insert(key);
  const auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<bool> OptionMap::Bool(const std::string& key) {
  const std::string* text = Find(key);
  if (text == nullptr) return std::nullopt;
  const std::string lowered = Lowercase(TrimSpace(*text));
  if (lowered == "true" || lowered == "1" || lowered == "yes") return true;
  if (lowered == "false" || lowered == "0" || lowered == "no") return false;
  FailValue(key, "true or false", *text);
}

std::optional<int64_t> OptionMap::Int(const std::string& key) {
  const std::string* text = Find(key);
  if (text == nullptr) return std::nullopt;
  const std::string_view trimmed = TrimSpace(*text);
  int64_t value = 0;
  const char* last = trimmed.data() + trimmed.size();
  const auto [ptr, ec] = std::from_chars(trimmed.data(), last, value);
  if (trimmed.empty() || ec != std::errc() || ptr != last) FailValue(key, "an integer", *text);
  return value;
}

std::optional<double> OptionMap::Number(const std::string& key) {
  const std::string* text = Find(key);
  if (text == nullptr) return std::nullopt;
  const std::optional<double> value = ParseFiniteNumber(*text);
  if (!value.has_value()) FailValue(key, "a finite number", *text);
  return value;
}

void OptionMap::FailValue(const std::string& key, std::string_view expected,
                          const std::string& text) const {
  Fail(ErrorCode::kInvalidArgument, "{}: option {}: expected {}, got '{}'", owner_, key, expected,
       text);
}

void OptionMap::RejectOthers(const std::vector<std::string>& accepted,
                             const std::string& taker) const {
  for (const auto& [normalized, written] : written_) {
    if (std::find(accepted.begin(), accepted.end(), normalized) != accepted.end()) continue;
    if (accepted.empty()) {
      Fail(ErrorCode::kInvalidArgument, "{} takes no options, got '{}'",
           taker.empty() ? owner_ : taker, written);
    }
    Fail(ErrorCode::kInvalidArgument, "{} does not take option '{}'; it takes: {}",
         taker.empty() ? owner_ : taker, written, fmt::join(accepted, ", "));
  }
}

void OptionMap::RejectUnread() const {
  RejectOthers(std::vector<std::string>(read_.begin(), read_.end()));
}

}  // namespace autodist::config
