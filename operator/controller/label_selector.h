// Label selectors in their string form ("app=x,tier!=db,env in (a,b),!canary,owner"), matched
// against an object's metadata.labels — what the cache needs to answer List(selector) the way
// the API server would.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace autodist::controller {

class LabelSelector {
 public:
  // The empty selector: matches everything.
  LabelSelector() = default;
  // Throws autodist::Error (kInvalidArgument) naming the selector when it does not parse.
  static LabelSelector Parse(const std::string& text);
  // key=value for every entry.
  static LabelSelector FromLabels(const std::map<std::string, std::string>& labels);

  // `labels` is metadata.labels (an object of strings, or null).
  bool Matches(const nlohmann::json& labels) const;
  bool empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

}  // namespace autodist::controller
