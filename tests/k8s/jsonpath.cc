#include "tests/k8s/jsonpath.h"

#include <cctype>

#include "tests/k8s/api_error.h"

namespace autodist::k8s {
namespace {

struct Step {
  enum Kind { kField, kIndex, kAll, kFilter };
  explicit Step(Kind k, std::string f = "") : kind(k), field(std::move(f)) {}
  Kind kind;
  std::string field;  // kField; the filter's field path (dotted) for kFilter
  long index = 0;     // kIndex (negative counts from the end)
  bool has_value = false;
  bool negated = false;
  nlohmann::json value;  // kFilter comparison operand
};

[[noreturn]] void BadPath(const std::string& path, const std::string& why) {
  FailApi(400, "BadRequest", "unsupported JSONPath '{}': {}", path, why);
}

std::string QuotedName(const std::string& path, size_t& i) {
  const char quote = path[i++];
  std::string name;
  while (i < path.size() && path[i] != quote) {
    if (path[i] == '\\' && i + 1 < path.size()) ++i;
    name += path[i++];
  }
  if (i >= path.size()) BadPath(path, "unterminated quote");
  ++i;
  return name;
}

Step ParseFilter(const std::string& path, const std::string& expr) {
  // expr: "@.a.b==\"x\"", "@.a!='x'", "@.a==3", "@.a"
  if (expr.rfind("@.", 0) != 0) BadPath(path, "filters must start with @.");
  Step step(Step::kFilter);
  size_t op = expr.find("==");
  size_t skip = 2;
  if (op == std::string::npos && (op = expr.find("!=")) != std::string::npos) step.negated = true;
  if (op == std::string::npos) {
    step.field = expr.substr(2);
    return step;
  }
  step.field = expr.substr(2, op - 2);
  while (!step.field.empty() && step.field.back() == ' ') step.field.pop_back();
  std::string operand = expr.substr(op + skip);
  while (!operand.empty() && operand.front() == ' ') operand.erase(0, 1);
  while (!operand.empty() && operand.back() == ' ') operand.pop_back();
  step.has_value = true;
  if (!operand.empty() && (operand[0] == '"' || operand[0] == '\'')) {
    size_t i = 0;
    step.value = QuotedName(operand, i);
  } else {
    step.value = nlohmann::json::parse(operand, nullptr, false);
    if (step.value.is_discarded()) step.value = operand;
  }
  return step;
}

std::vector<Step> Parse(const std::string& raw) {
  std::string path = raw;
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') {
    path = path.substr(1, path.size() - 2);
  }
  if (!path.empty() && path[0] == '$') path = path.substr(1);
  std::vector<Step> steps;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
      if (i < path.size() && path[i] == '*') {
        steps.emplace_back(Step::kAll);
        ++i;
        continue;
      }
      std::string name;
      while (i < path.size() && path[i] != '.' && path[i] != '[') {
        if (path[i] == '\\' && i + 1 < path.size()) ++i;
        name += path[i++];
      }
      if (!name.empty()) steps.emplace_back(Step::kField, name);
    } else if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) BadPath(raw, "missing ']'");
      std::string inner = path.substr(i + 1, close - i - 1);
      if (inner == "*") {
        steps.emplace_back(Step::kAll);
      } else if (!inner.empty() && (inner[0] == '\'' || inner[0] == '"')) {
        size_t j = i + 1;
        steps.emplace_back(Step::kField, QuotedName(path, j));
      } else if (inner.rfind("?(", 0) == 0 && inner.back() == ')') {
        steps.push_back(ParseFilter(raw, inner.substr(2, inner.size() - 3)));
      } else {
        char* end = nullptr;
        const long index = std::strtol(inner.c_str(), &end, 10);
        if (inner.empty() || *end != '\0') BadPath(raw, "unsupported subscript [" + inner + "]");
        Step step(Step::kIndex);
        step.index = index;
        steps.push_back(step);
      }
      i = close + 1;
    } else {
      BadPath(raw, std::string("unexpected '") + path[i] + "'");
    }
  }
  return steps;
}

const nlohmann::json* Lookup(const nlohmann::json& node, const std::string& dotted) {
  const nlohmann::json* cur = &node;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    const std::string key = dotted.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

}  // namespace

std::vector<const nlohmann::json*> EvaluateJsonPath(const nlohmann::json& root,
                                                    const std::string& path) {
  std::vector<const nlohmann::json*> current = {&root};
  for (const Step& step : Parse(path)) {
    std::vector<const nlohmann::json*> next;
    for (const nlohmann::json* node : current) {
      switch (step.kind) {
        case Step::kField:
          if (node->is_object() && node->contains(step.field)) next.push_back(&(*node)[step.field]);
          break;
        case Step::kIndex:
          if (node->is_array()) {
            const long size = static_cast<long>(node->size());
            const long at = step.index < 0 ? size + step.index : step.index;
            if (at >= 0 && at < size) next.push_back(&(*node)[static_cast<size_t>(at)]);
          }
          break;
        case Step::kAll:
          if (node->is_array() || node->is_object()) {
            for (const auto& child : *node) next.push_back(&child);
          }
          break;
        case Step::kFilter:
          if (!node->is_array()) break;
          for (const auto& child : *node) {
            const nlohmann::json* v = Lookup(child, step.field);
            const bool match =
                step.has_value ? (v != nullptr && *v == step.value) != step.negated : v != nullptr;
            if (match) next.push_back(&child);
          }
          break;
      }
    }
    current = std::move(next);
  }
  return current;
}

}  // namespace autodist::k8s
