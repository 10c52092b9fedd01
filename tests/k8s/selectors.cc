#include "tests/k8s/selectors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "tests/k8s/api_error.h"

namespace autodist::k8s {
namespace {

// Tokens of the label-selector grammar.
struct Lexer {
  std::string_view text;
  size_t pos = 0;

  void SkipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  }
  bool AtEnd() {
    SkipSpace();
    return pos >= text.size();
  }
  // Operators and punctuation: "==", "!=", "=", "!", ">", "<", "(", ")", ",".
  std::string Symbol() {
    SkipSpace();
    if (pos >= text.size()) return "";
    for (std::string_view op : {"==", "!=", "=", "!", ">", "<", "(", ")", ","}) {
      if (text.substr(pos, op.size()) == op) {
        pos += op.size();
        return std::string(op);
      }
    }
    return "";
  }
  std::string PeekSymbol() {
    const size_t saved = pos;
    std::string s = Symbol();
    pos = saved;
    return s;
  }
  // A key, value or keyword: anything up to whitespace or punctuation.
  std::string Word() {
    SkipSpace();
    const size_t start = pos;
    while (pos < text.size() && !std::isspace(static_cast<unsigned char>(text[pos])) &&
           std::string_view("=!<>(),").find(text[pos]) == std::string_view::npos) {
      ++pos;
    }
    return std::string(text.substr(start, pos - start));
  }
};

[[noreturn]] void BadSelector(std::string_view text, const std::string& why) {
  FailApi(400, "BadRequest", "unable to parse requirement: {} in selector \"{}\"", why, text);
}

std::vector<std::string> ValueSet(Lexer& lex, std::string_view text) {
  if (lex.Symbol() != "(") BadSelector(text, "expected '(' after in/notin");
  std::vector<std::string> values;
  while (true) {
    values.push_back(lex.Word());
    const std::string sep = lex.Symbol();
    if (sep == ")") break;
    if (sep != ",") BadSelector(text, "expected ',' or ')' in value set");
  }
  return values;
}

// Field selector values escape ',', '=' and '\' with a backslash.
std::vector<std::string> SplitUnescaped(std::string_view text, char sep) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      parts.back() += text[++i];
    } else if (text[i] == sep) {
      parts.emplace_back();
    } else {
      parts.back() += text[i];
    }
  }
  return parts;
}

const std::vector<std::string>& BuiltinFields(const ResourceInfo& r) {
  static const std::vector<std::string> kNone;
  static const std::vector<std::string> kPods = {
      "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
      "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  static const std::vector<std::string> kEvents = {"involvedObject.kind",
                                                   "involvedObject.namespace",
                                                   "involvedObject.name",
                                                   "involvedObject.uid",
                                                   "involvedObject.apiVersion",
                                                   "involvedObject.resourceVersion",
                                                   "involvedObject.fieldPath",
                                                   "reason",
                                                   "reportingComponent",
                                                   "source",
                                                   "type"};
  static const std::vector<std::string> kPhase = {"status.phase"};
  static const std::vector<std::string> kNodes = {"spec.unschedulable"};
  static const std::vector<std::string> kSecrets = {"type"};
  if (r.is_custom) return r.selectable_fields;
  if (r.plural == "pods") return kPods;
  if (r.plural == "events") return kEvents;
  if (r.plural == "namespaces") return kPhase;
  if (r.plural == "nodes") return kNodes;
  if (r.plural == "secrets") return kSecrets;
  return kNone;
}

}  // namespace

LabelSelector LabelSelector::Parse(std::string_view text) {
  LabelSelector selector;
  Lexer lex{text};
  while (!lex.AtEnd()) {
    Requirement req;
    if (lex.PeekSymbol() == "!") {
      lex.Symbol();
      req.key = lex.Word();
      req.op = Op::kNotExists;
    } else {
      req.key = lex.Word();
      const std::string op = lex.PeekSymbol();
      if (op == "=" || op == "==" || op == "!=") {
        lex.Symbol();
        req.op = op == "!=" ? Op::kNotEquals : Op::kEquals;
        req.values.push_back(lex.Word());
      } else if (op == ">" || op == "<") {
        lex.Symbol();
        req.op = op == ">" ? Op::kGreater : Op::kLess;
        req.values.push_back(lex.Word());
        char* end = nullptr;
        std::strtoll(req.values[0].c_str(), &end, 10);
        if (req.values[0].empty() || *end != '\0') {
          BadSelector(text, "for 'gt', 'lt' operators, the value must be an integer");
        }
      } else if (op == "," || lex.AtEnd()) {
        req.op = Op::kExists;
      } else {
        const std::string keyword = op.empty() ? lex.Word() : op;
        if (keyword == "in" || keyword == "notin") {
          req.op = keyword == "in" ? Op::kIn : Op::kNotIn;
          req.values = ValueSet(lex, text);
        } else {
          BadSelector(text, "found '" + keyword + "', expected: in, notin, =, ==, !=, gt, lt");
        }
      }
    }
    if (req.key.empty()) BadSelector(text, "expected a label key");
    selector.requirements_.push_back(std::move(req));
    if (lex.AtEnd()) break;
    if (lex.Symbol() != ",") BadSelector(text, "expected ',' between requirements");
    if (lex.AtEnd()) BadSelector(text, "found '', expected: identifier after ','");
  }
  return selector;
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  for (const auto& req : requirements_) {
    const bool has = labels.is_object() && labels.contains(req.key);
    const std::string value =
        has && labels[req.key].is_string() ? labels[req.key].get<std::string>() : std::string();
    const auto in = [&] {
      return std::find(req.values.begin(), req.values.end(), value) != req.values.end();
    };
    bool ok = false;
    switch (req.op) {
      case Op::kEquals:
      case Op::kIn:
        ok = has && in();
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !has || !in();
        break;
      case Op::kExists:
        ok = has;
        break;
      case Op::kNotExists:
        ok = !has;
        break;
      case Op::kGreater:
      case Op::kLess: {
        char* end = nullptr;
        const long long v = std::strtoll(value.c_str(), &end, 10);
        const long long bound = std::strtoll(req.values[0].c_str(), nullptr, 10);
        ok = has && !value.empty() && *end == '\0' &&
             (req.op == Op::kGreater ? v > bound : v < bound);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

FieldSelector FieldSelector::Parse(std::string_view text, const ResourceInfo& resource) {
  FieldSelector selector;
  if (text.empty()) return selector;
  for (const std::string& part : SplitUnescaped(text, ',')) {
    Term term;
    size_t at = part.find("!=");
    size_t skip = 2;
    term.negated = at != std::string::npos;
    if (!term.negated) {
      at = part.find("==");
      if (at == std::string::npos) {
        at = part.find('=');
        skip = 1;
      }
    }
    if (at == std::string::npos) {
      FailApi(400, "BadRequest", "invalid field selector: '{}' is not a valid term", part);
    }
    term.field = part.substr(0, at);
    term.value = part.substr(at + skip);
    const auto& extra = BuiltinFields(resource);
    if (term.field != "metadata.name" && term.field != "metadata.namespace" &&
        std::find(extra.begin(), extra.end(), term.field) == extra.end()) {
      FailApi(400, "BadRequest", "field label not supported: {}", term.field);
    }
    selector.terms_.push_back(std::move(term));
  }
  return selector;
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  for (const auto& term : terms_) {
    if ((FieldValue(object, term.field) == term.value) == term.negated) return false;
  }
  return true;
}

std::optional<std::string> FieldSelector::PinnedName() const {
  for (const auto& term : terms_) {
    if (term.field == "metadata.name" && !term.negated) return term.value;
  }
  return std::nullopt;
}

std::string FieldValue(const nlohmann::json& object, const std::string& field) {
  // Events select on "source" meaning source.component.
  const std::string path = field == "source" ? "source.component" : field;
  const nlohmann::json* node = &object;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!node->is_object() || !node->contains(key)) return "";
    node = &(*node)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (node->is_string()) return node->get<std::string>();
  if (node->is_null()) return "";
  return node->dump();
}

}  // namespace autodist::k8s
