#include "operator/controller/label_selector.h"

#include <algorithm>
#include <cctype>

#include "runtime/common/error.h"

namespace autodist::controller {
namespace {

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// Splits on commas outside parentheses: "a in (x,y),b" → "a in (x,y)", "b".
std::vector<std::string> SplitTerms(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (const char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(Trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  out.push_back(Trim(current));
  return out;
}

bool ValidKey(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
           c == '/';
  });
}

}  // namespace

LabelSelector LabelSelector::Parse(const std::string& text) {
  LabelSelector selector;
  if (Trim(text).empty()) return selector;
  const auto bad = [&text](const std::string& term, const char* expected) {
    Fail(ErrorCode::kInvalidArgument, "label selector '{}': term '{}': expected {}", text, term,
         expected);
  };
  for (const std::string& term : SplitTerms(text)) {
    Requirement r;
    if (term.empty())
      bad(term, "key, !key, key=value, key!=value, key in (...) or key notin (...)");
    if (const auto paren = term.find('('); paren != std::string::npos) {
      if (term.back() != ')') bad(term, "a closing ')'");
      std::string head = Trim(term.substr(0, paren));
      const auto space = head.find_last_of(" \t");
      if (space == std::string::npos) bad(term, "'key in (...)' or 'key notin (...)'");
      const std::string op = head.substr(space + 1);
      r.key = Trim(head.substr(0, space));
      if (op == "in") {
        r.op = Op::kIn;
      } else if (op == "notin") {
        r.op = Op::kNotIn;
      } else {
        bad(term, "the operator 'in' or 'notin'");
      }
      for (const auto& v : SplitTerms(term.substr(paren + 1, term.size() - paren - 2))) {
        r.values.push_back(v);
      }
    } else if (const auto ne = term.find("!="); ne != std::string::npos) {
      r.key = Trim(term.substr(0, ne));
      r.op = Op::kNotEquals;
      r.values = {Trim(term.substr(ne + 2))};
    } else if (const auto eq = term.find('='); eq != std::string::npos) {
      r.key = Trim(term.substr(0, eq));
      r.op = Op::kEquals;
      const size_t value_at = term.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      r.values = {Trim(term.substr(value_at))};
    } else if (term[0] == '!') {
      r.key = Trim(term.substr(1));
      r.op = Op::kNotExists;
    } else {
      r.key = term;
      r.op = Op::kExists;
    }
    if (!ValidKey(r.key)) bad(term, "a label key of letters, digits, '-', '_', '.' and '/'");
    selector.requirements_.push_back(std::move(r));
  }
  return selector;
}

LabelSelector LabelSelector::FromLabels(const std::map<std::string, std::string>& labels) {
  LabelSelector selector;
  for (const auto& [key, value] : labels) {
    selector.requirements_.push_back({key, Op::kEquals, {value}});
  }
  return selector;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const auto& r : requirements_) {
    const bool has = labels.is_object() && labels.contains(r.key) && labels[r.key].is_string();
    const std::string value = has ? labels[r.key].get<std::string>() : "";
    const bool listed = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    bool ok = false;
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        ok = has && listed;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !has || !listed;  // as on the server: a missing label satisfies != and notin
        break;
      case Op::kExists:
        ok = has;
        break;
      case Op::kNotExists:
        ok = !has;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace autodist::controller
