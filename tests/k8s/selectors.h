// Label and field selectors as the API server parses them from ?labelSelector= and
// ?fieldSelector= (k8s.io/apimachinery labels.Parse and fields.ParseSelector syntax).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/k8s/resources.h"

namespace autodist::k8s {

class LabelSelector {
 public:
  // Parses "a=b,c!=d,e in (f,g),h notin (i),j,!k,l>3". Throws ApiError (400 BadRequest) on bad
  // syntax. An empty string selects everything.
  static LabelSelector Parse(std::string_view text);

  // `labels` is metadata.labels (an object, or null when the object has none).
  bool Matches(const nlohmann::json& labels) const;
  bool Empty() const { return requirements_.empty(); }

 private:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists, kGreater, kLess };
  struct Requirement {
    std::string key;
    Op op;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  // Parses "metadata.name=x,status.phase!=Running". Fields beyond metadata.name and
  // metadata.namespace must be ones the real server supports for `resource` (pods: spec.nodeName,
  // status.phase, ...; CRDs: their selectableFields); others are a 400 BadRequest, as on a
  // real cluster.
  static FieldSelector Parse(std::string_view text, const ResourceInfo& resource);

  bool Matches(const nlohmann::json& object) const;
  bool Empty() const { return terms_.empty(); }
  // The name an equality term on metadata.name pins, so a lookup can skip the scan.
  std::optional<std::string> PinnedName() const;

 private:
  struct Term {
    std::string field;
    bool negated;
    std::string value;
  };
  std::vector<Term> terms_;
};

// The string value of a selectable field ("" when absent), as field selectors compare it.
std::string FieldValue(const nlohmann::json& object, const std::string& field);

}  // namespace autodist::k8s
