#include "tests/k8s/clock.h"

#include <fmt/format.h>

#include <ctime>
#include <mutex>
#include <random>

namespace autodist::k8s {
namespace {

std::mt19937_64& Rng() {
  static std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

std::mutex& RngMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

std::string FormatRfc3339(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string NowRfc3339() { return FormatRfc3339(std::chrono::system_clock::now()); }

std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text) {
  std::tm utc{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &utc);
  if (end == nullptr) return std::nullopt;
  // Fractional seconds and a 'Z' suffix are accepted; explicit offsets are not produced by us.
  return std::chrono::system_clock::from_time_t(timegm(&utc));
}

std::string HumanDuration(std::chrono::seconds d) {
  // Same breakpoints as k8s.io/apimachinery/pkg/util/duration.HumanDuration.
  const long long s = d.count();
  // Up to a second in the future reads as "0s": clocks of client and server may differ.
  if (s < -1) return "<invalid>";
  if (s < 0) return "0s";
  if (s < 120) return fmt::format("{}s", s);
  const long long m = s / 60;
  if (m < 10) {
    return s % 60 == 0 ? fmt::format("{}m", m) : fmt::format("{}m{}s", m, s % 60);
  }
  if (m < 180) return fmt::format("{}m", m);
  const long long h = s / 3600;
  if (h < 8) return m % 60 == 0 ? fmt::format("{}h", h) : fmt::format("{}h{}m", h, m % 60);
  if (h < 48) return fmt::format("{}h", h);
  if (h < 24 * 8) {
    return h % 24 == 0 ? fmt::format("{}d", h / 24) : fmt::format("{}d{}h", h / 24, h % 24);
  }
  if (h < 24 * 365 * 2) return fmt::format("{}d", h / 24);
  if (h < 24 * 365 * 8) {
    const long long days = h / 24;
    return days % 365 == 0 ? fmt::format("{}y", days / 365)
                           : fmt::format("{}y{}d", days / 365, days % 365);
  }
  return fmt::format("{}y", h / 24 / 365);
}

std::string NewUid() {
  std::lock_guard lock(RngMutex());
  const unsigned long long a = Rng()();
  const unsigned long long b = Rng()();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     0x8000 | (b >> 48 & 0x3fff), b & 0xffffffffffffULL);
}

std::string RandomSuffix(int n) {
  // Vowels and look-alike digits are left out so generated names never spell words.
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::lock_guard lock(RngMutex());
  std::uniform_int_distribution<int> pick(0, sizeof(kAlphabet) - 2);
  std::string out;
  for (int i = 0; i < n; ++i) out += kAlphabet[pick(Rng())];
  return out;
}

}  // namespace autodist::k8s
