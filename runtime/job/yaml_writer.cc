#include "runtime/job/yaml_writer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string_view>

namespace autodist::job::detail {
namespace {

// yaml-cpp, kubectl (YAML 1.1) and YAML 1.2 between them read these as null or booleans.
constexpr std::array<std::string_view, 26> kReservedWords = {
    "~",     "null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
    "FALSE", "yes",  "Yes",  "YES",  "no",   "No",   "NO",   "on",    "On",
    "ON",    "off",  "Off",  "OFF",  "y",    "Y",    "n",    "N"};

bool IsNumber(std::string_view text) {
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) text.remove_prefix(1);
  if (text.empty()) return false;
  // Hexadecimal, octal, infinity and NaN spellings of YAML.
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'o')) return true;
  if (text.front() == '.' && text.size() > 1 && !(text[1] >= '0' && text[1] <= '9')) {
    return true;  // .inf, .nan and the like: quoting a string that is none costs nothing
  }
  double value = 0;
  const char* last = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), last, value);
  return ptr == last && (ec == std::errc() || ec == std::errc::result_out_of_range);
}

}  // namespace

bool NeedsQuotes(const std::string& text) {
  if (text.empty()) return true;
  // A plain scalar loses its leading and trailing spaces, and line breaks (\r included) fold:
  // such strings, and any with control characters, are written double-quoted (escaped).
  if (std::isspace(static_cast<unsigned char>(text.front())) != 0 ||
      std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    return true;
  }
  if (std::any_of(text.begin(), text.end(),
                  [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
    return true;
  }
  for (const std::string_view word : kReservedWords) {
    if (text == word) return true;
  }
  return IsNumber(text);
}

void EmitString(YAML::Emitter& out, const std::string& text) {
  if (NeedsQuotes(text)) {
    out << YAML::DoubleQuoted << text;
  } else {
    out << text;
  }
}

void EmitNode(YAML::Emitter& out, const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      out << YAML::BeginMap;
      for (const auto& entry : node) {
        out << YAML::Key;
        EmitNode(out, entry.first);
        out << YAML::Value;
        EmitNode(out, entry.second);
      }
      out << YAML::EndMap;
      return;
    case YAML::NodeType::Sequence:
      out << YAML::BeginSeq;
      for (const auto& item : node) EmitNode(out, item);
      out << YAML::EndSeq;
      return;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted and block scalars "!" and plain ones "?"; !!str marks a string too.
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
        EmitString(out, node.Scalar());
      } else {
        out << node.Scalar();
      }
      return;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      out << YAML::Null;
      return;
  }
}

}  // namespace autodist::job::detail
