// Options as users write them: `key -> value text` maps (`--option sync=true`, `chunkSize: 64` in a
// manifest, an optimizer's `weightDecay: 0.01`), keys accepted in snake_case or camelCase. One
// reader for every owner of such options (optimizers, learning-rate schedules, strategy
// builders), so that keys are spelled, parsed and refused the same way everywhere, with errors of
// one shape:
//   optimizer adam: option eps: expected a finite number, got 'x'
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace autodist::config {

// "weightDecay" -> "weight_decay", "lazy-sparse" -> "lazy_sparse"; snake_case keys are returned
// unchanged.
std::string SnakeCaseKey(std::string_view key);

std::string Lowercase(std::string_view text);

// `text` without leading and trailing white space.
std::string_view TrimSpace(std::string_view text);

// `text` (white space around it allowed) as a finite number, or nullopt.
std::optional<double> ParseFiniteNumber(std::string_view text);

class OptionMap {
 public:
  // `owner` begins every message: "optimizer adam", "builder AllReduce", "learning-rate
  // schedule". Throws InvalidArgument when two keys name the same option ("lr" and "Lr").
  OptionMap(std::string owner, const std::map<std::string, std::string>& options);

  const std::string& owner() const { return owner_; }

  // Whether `key` (snake_case) was given; does not count as reading it.
  bool Has(const std::string& key) const;
  // The value text of `key`, or nullptr; marks the key read.
  const std::string* Find(const std::string& key);

  // Typed reads: nullopt when the option is absent; InvalidArgument naming the owner, the option
  // and what was expected when its text is not one. Each marks the key read.
  std::optional<bool> Bool(const std::string& key);      // true/false, 1/0, yes/no, any case
  std::optional<int64_t> Int(const std::string& key);    // a whole number
  std::optional<double> Number(const std::string& key);  // a finite number

  // Throws InvalidArgument: "<owner>: option <key>: expected <expected>, got '<text>'".
  [[noreturn]] void FailValue(const std::string& key, std::string_view expected,
                              const std::string& text) const;

  // Throws InvalidArgument for the first given option not in `accepted` (snake_case):
  // "<taker> does not take option '<key as written>'; it takes: a, b". `taker` defaults to the
  // owner.
  void RejectOthers(const std::vector<std::string>& accepted, const std::string& taker = "") const;
  // The same for every given option that no read asked for, listing the ones that were: for
  // owners that declare what they take by reading it.
  void RejectUnread() const;

  // Normalized key -> value text, every option given.
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::string owner_;
  std::map<std::string, std::string> values_;   // normalized key -> value
  std::map<std::string, std::string> written_;  // normalized key -> key as the user wrote it
  std::set<std::string> read_;
};

}  // namespace autodist::config
