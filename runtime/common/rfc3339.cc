#include "runtime/common/rfc3339.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <ctime>

namespace autodist {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil), so no
// time zone or locale of the machine is involved.
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto year_of_era = static_cast<unsigned>(year - era * 400);
  const unsigned day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + static_cast<int64_t>(day_of_era) - 719468;
}

bool ReadDigits(const std::string& text, size_t& at, size_t count, int& value) {
  if (at + count > text.size()) return false;
  value = 0;
  for (size_t i = 0; i < count; ++i) {
    const char c = text[at + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    value = value * 10 + (c - '0');
  }
  at += count;
  return true;
}

bool Expect(const std::string& text, size_t& at, char c) {
  if (at >= text.size() || (text[at] != c && !(c == 'T' && text[at] == 't'))) return false;
  ++at;
  return true;
}

}  // namespace

std::string FormatRfc3339(SystemTime time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(
      std::chrono::time_point_cast<std::chrono::seconds>(time));
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
}

std::optional<SystemTime> ParseRfc3339(const std::string& text) {
  size_t at = 0;
  int year = 0;
  int month = 0;
  int day = 0;
  int hour = 0;
  int minute = 0;
  int second = 0;
  if (!ReadDigits(text, at, 4, year) || !Expect(text, at, '-') || !ReadDigits(text, at, 2, month) ||
      !Expect(text, at, '-') || !ReadDigits(text, at, 2, day) || !Expect(text, at, 'T') ||
      !ReadDigits(text, at, 2, hour) || !Expect(text, at, ':') ||
      !ReadDigits(text, at, 2, minute) || !Expect(text, at, ':') ||
      !ReadDigits(text, at, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  if (at < text.size() && text[at] == '.') {
    ++at;
    const size_t digits = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    if (at == digits) return std::nullopt;
  }
  int64_t offset_seconds = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    const int sign = text[at] == '-' ? -1 : 1;
    ++at;
    int offset_hours = 0;
    int offset_minutes = 0;
    if (!ReadDigits(text, at, 2, offset_hours) || !Expect(text, at, ':') ||
        !ReadDigits(text, at, 2, offset_minutes)) {
      return std::nullopt;
    }
    offset_seconds = sign * (int64_t{offset_hours} * 3600 + int64_t{offset_minutes} * 60);
  } else {
    return std::nullopt;
  }
  if (at != text.size()) return std::nullopt;
  const int64_t days =
      DaysFromCivil(year, static_cast<unsigned>(month), static_cast<unsigned>(day));
  const int64_t epoch_seconds =
      days * 86400 + int64_t{hour} * 3600 + int64_t{minute} * 60 + second - offset_seconds;
  return SystemTime(std::chrono::seconds(epoch_seconds));
}

}  // namespace autodist
