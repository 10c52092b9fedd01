// URL pieces for API paths and query strings, encoded the way the API server decodes them.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autodist::kube {

// Percent-encodes everything but RFC 3986's unreserved characters, so label selectors
// ("app in (a,b)", "!x") and names survive as one path segment or query value.
std::string PercentEncode(std::string_view text);

// Builds "?k=v&k2=v2" from the pairs whose value is not empty ("" when none are).
class Query {
 public:
  Query& Add(const std::string& key, const std::string& value);
  std::string str() const;

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

}  // namespace autodist::kube
