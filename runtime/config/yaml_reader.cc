#include "runtime/config/yaml_reader.h"

#include <fmt/ranges.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <set>
#include <sstream>

namespace autodist::config {
namespace {

bool IsPlainKey(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '_' || c == '-';
  });
}

// Counts documents without building them (yaml-cpp's events).
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& /*mark*/) override { ++documents; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& /*mark*/, YAML::anchor_t /*anchor*/) override {}
  void OnAlias(const YAML::Mark& /*mark*/, YAML::anchor_t /*anchor*/) override {}
  void OnScalar(const YAML::Mark& /*mark*/, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                const std::string& /*value*/) override {}
  void OnSequenceStart(const YAML::Mark& /*mark*/, const std::string& /*tag*/,
                       YAML::anchor_t /*anchor*/, YAML::EmitterStyle::value /*style*/) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& /*mark*/, const std::string& /*tag*/, YAML::anchor_t /*anchor*/,
                  YAML::EmitterStyle::value /*style*/) override {}
  void OnMapEnd() override {}

  int documents = 0;
};

// More documents than any file we read holds. yaml-cpp 0.7 finds a new empty document at a
// stray flow indicator (a text of just ",") forever: LoadAll would allocate until the process
// dies (found by tests/fuzz/job_manifest_fuzzer.cc), so the documents are counted first.
constexpr int kMaxDocuments = 1000;

void CheckDocumentCount(const std::string& text, const std::string& source) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentCounter counter;
  while (parser.HandleNextDocument(counter)) {
    AD_CHECK(counter.documents <= kMaxDocuments, kInvalidArgument,
             "{}: invalid YAML: more than {} documents (a stray ',' or '-' where a document "
             "should start?)",
             source, kMaxDocuments);
  }
}

// The length of the UTF-8 sequence at `at` (1..4), or 0 when it is not one (a stray continuation
// byte, a truncated or overlong sequence, a surrogate, past U+10FFFF).
size_t Utf8SequenceAt(const std::string& text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t code = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    code = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    code = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    code = lead & 0x07;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(at + i) & 0x3F);
  }
  constexpr std::array<uint32_t, 5> kSmallest = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

// YAML is Unicode text, and so is every string Kubernetes stores: yaml-cpp reads other bytes
// without a word but writes them back as U+FFFD, so a manifest would not survive its own writer
// (the fuzzer's find). Refused naming the line and column.
void CheckUtf8(const std::string& text, const std::string& source) {
  size_t line = 1;
  size_t line_start = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t length = Utf8SequenceAt(text, at);
    AD_CHECK(length > 0, kInvalidArgument, "{}:{}:{}: invalid YAML: byte {:#04x} is not UTF-8 text",
             source, line, at - line_start + 1, static_cast<unsigned char>(text[at]));
    if (text[at] == '\n') {
      ++line;
      line_start = at + 1;
    }
    at += length;
  }
}

}  // namespace

std::vector<YAML::Node> LoadYamlDocuments(const std::string& text, const std::string& source) {
  CheckUtf8(text, source);
  try {
    CheckDocumentCount(text, source);
    return YAML::LoadAll(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) Fail(ErrorCode::kInvalidArgument, "{}: invalid YAML: {}", source, e.msg);
    Fail(ErrorCode::kInvalidArgument, "{}:{}:{}: invalid YAML: {}", source, e.mark.line + 1,
         e.mark.column + 1, e.msg);
  }
}

void ParseContext::Remember(const std::string& path, const YAML::Mark& mark) {
  if (!mark.is_null()) lines_[path] = mark.line + 1;
}

std::string ParseContext::Location(const std::string& path) const {
  // The nearest remembered field: the path itself, else its parents (a missing field is reported
  // at the line of the mapping that lacks it).
  std::string candidate = path;
  while (true) {
    const auto it = lines_.find(candidate);
    if (it != lines_.end()) {
      return path.empty() ? fmt::format("{}:{}: ", source_, it->second)
                          : fmt::format("{}:{}: {}: ", source_, it->second, path);
    }
    const size_t cut = candidate.find_last_of(".[");
    if (cut == std::string::npos || cut == 0) break;
    candidate.resize(cut);
  }
  return path.empty() ? fmt::format("{}: ", source_) : fmt::format("{}: {}: ", source_, path);
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return fmt::format("\"{}\"", node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "an empty value";
}

std::string JoinPath(const std::string& parent, const std::string& key) {
  if (!IsPlainKey(key)) return fmt::format("{}[\"{}\"]", parent, key);
  return parent.empty() ? key : parent + "." + key;
}

std::string IndexPath(const std::string& parent, size_t index) {
  return fmt::format("{}[{}]", parent, index);
}

std::string ReadString(const ParseContext& context, const YAML::Node& node,
                       const std::string& path) {
  if (!node.IsScalar()) context.Fail(path, "expected a string, got {}", Describe(node));
  return node.Scalar();
}

int64_t ReadInt(const ParseContext& context, const YAML::Node& node, const std::string& path,
                int64_t minimum, int64_t maximum) {
  int64_t value = 0;
  bool parsed = false;
  bool beyond_int64 = false;  // an integer too large (or small) for int64_t
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    const char* last = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), last, value);
    parsed = !text.empty() && ec == std::errc() && ptr == last;
    beyond_int64 = !text.empty() && ec == std::errc::result_out_of_range && ptr == last;
  }
  if (!beyond_int64 && (!parsed || value < minimum)) {
    context.Fail(path, "expected an integer >= {}, got {}", minimum, Describe(node));
  }
  if (beyond_int64 || value > maximum) {
    context.Fail(path, "expected an integer between {} and {}, got {}", minimum, maximum,
                 Describe(node));
  }
  return value;
}

bool ReadBool(const ParseContext& context, const YAML::Node& node, const std::string& path) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    context.Fail(path, "expected true or false, got {}", Describe(node));
  }
  return value;
}

double ReadNumber(const ParseContext& context, const YAML::Node& node, const std::string& path) {
  double value = 0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value)) {
    context.Fail(path, "expected a number, got {}", Describe(node));
  }
  return value;
}

std::string ReadScalarOrList(const ParseContext& context, const YAML::Node& node,
                             const std::string& path) {
  if (node.IsScalar()) return node.Scalar();
  if (!node.IsSequence()) {
    context.Fail(path, "expected a value or a list of values, got {}", Describe(node));
  }
  std::vector<std::string> items;
  for (size_t i = 0; i < node.size(); ++i) {
    items.push_back(ReadString(context, node[i], IndexPath(path, i)));
  }
  return fmt::format("{}", fmt::join(items, ","));
}

MapReader::MapReader(ParseContext& context, const YAML::Node& node, std::string path)
    : context_(context), path_(std::move(path)) {
  ReadEntries(node);
}

MapReader::MapReader(ParseContext& context, const YAML::Node& node, std::string path,
                     std::vector<std::string> known)
    : context_(context), path_(std::move(path)), known_(std::move(known)) {
  ReadEntries(node);
}

void MapReader::ReadEntries(const YAML::Node& node) {
  if (!node.IsMap()) {
    if (known_.has_value()) {
      context_.Fail(path_, "expected a mapping with fields {}, got {}", fmt::join(*known_, ", "),
                    Describe(node));
    }
    context_.Fail(path_, "expected a mapping, got {}", Describe(node));
  }
  std::set<std::string> seen;
  for (const auto& item : node) {
    const YAML::Node& key_node = item.first;
    if (!key_node.IsScalar()) {
      context_.Remember(path_, key_node.Mark());
      context_.Fail(path_, "field names must be strings, got {}", Describe(key_node));
    }
    const std::string& key = key_node.Scalar();
    const std::string field = JoinPath(path_, key);
    context_.Remember(field, key_node.Mark());
    if (known_.has_value() && std::find(known_->begin(), known_->end(), key) == known_->end()) {
      context_.Fail(field, "unknown field (expected one of: {})", fmt::join(*known_, ", "));
    }
    if (!seen.insert(key).second) context_.Fail(field, "field appears twice");
    entries_.push_back(Entry{key, item.second, field});
  }
}

void MapReader::CheckKnown(const std::string& key) const {
  AD_CHECK(!known_.has_value() || std::find(known_->begin(), known_->end(), key) != known_->end(),
           kInternal, "the parser reads field '{}' that {} does not declare", key, path_);
}

bool MapReader::Has(const std::string& key) const { return Find(key) != nullptr; }

const YAML::Node* MapReader::Find(const std::string& key) const {
  CheckKnown(key);
  for (const Entry& entry : entries_) {
    if (entry.key == key) return &entry.value;
  }
  return nullptr;
}

const YAML::Node& MapReader::Require(const std::string& key) const {
  const YAML::Node* node = Find(key);
  if (node == nullptr) context_.Fail(PathOf(key), "required field is missing");
  return *node;
}

std::optional<std::string> MapReader::String(const std::string& key) const {
  const YAML::Node* node = Find(key);
  if (node == nullptr) return std::nullopt;
  return ReadString(context_, *node, PathOf(key));
}

std::string MapReader::RequireString(const std::string& key) const {
  return ReadString(context_, Require(key), PathOf(key));
}

std::optional<int64_t> MapReader::Int(const std::string& key, int64_t minimum,
                                      int64_t maximum) const {
  const YAML::Node* node = Find(key);
  if (node == nullptr) return std::nullopt;
  return ReadInt(context_, *node, PathOf(key), minimum, maximum);
}

int64_t MapReader::RequireInt(const std::string& key, int64_t minimum, int64_t maximum) const {
  return ReadInt(context_, Require(key), PathOf(key), minimum, maximum);
}

std::optional<bool> MapReader::Bool(const std::string& key) const {
  const YAML::Node* node = Find(key);
  if (node == nullptr) return std::nullopt;
  return ReadBool(context_, *node, PathOf(key));
}

std::vector<std::pair<std::string, std::string>> ReadStringPairs(ParseContext& context,
                                                                 const YAML::Node& node,
                                                                 const std::string& path) {
  std::vector<std::pair<std::string, std::string>> pairs;
  const MapReader map(context, node, path);
  for (const MapReader::Entry& entry : map.entries()) {
    pairs.emplace_back(entry.key, ReadString(context, entry.value, entry.path));
  }
  return pairs;
}

}  // namespace autodist::config
