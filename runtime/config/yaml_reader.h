// Reading a YAML file field by field, with errors of one shape wherever the file comes from (a job
// manifest, a resource spec):
//   job.yaml:12: spec.resources.workers: expected an integer >= 1, got "two"
// For parsers only: the types they produce keep yaml-cpp out of their own headers.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::config {

// Every document of `text`: "<source>:<line>:<column>: invalid YAML: ..." when it does not parse
// or is not UTF-8 text.
std::vector<YAML::Node> LoadYamlDocuments(const std::string& text, const std::string& source);

// The file's name for messages and the line of every field seen so far, so that checks that span
// several fields can still point at a line.
class ParseContext {
 public:
  explicit ParseContext(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }

  void Remember(const std::string& path, const YAML::Mark& mark);

  // "job.yaml:12: spec.x: " (or without the line when none is known for `path` or a parent; or
  // without the path when it is empty).
  std::string Location(const std::string& path) const;

  template <typename... Args>
  [[noreturn]] void Fail(const std::string& path, fmt::format_string<Args...> format,
                         Args&&... args) const {
    throw Error(ErrorCode::kInvalidArgument,
                Location(path) + fmt::format(format, std::forward<Args>(args)...));
  }

  // Runs `body`; an autodist::Error it throws (another module's parser, e.g. the optimizer's)
  // is rethrown with the location of `path` in front, keeping its code.
  template <typename Body>
  auto Prefixing(const std::string& path, Body body) const -> decltype(body()) {
    try {
      return body();
    } catch (const Error& error) {
      throw Error(error.code(), Location(path) + error.what());
    }
  }

 private:
  std::string source_;
  std::map<std::string, int> lines_;  // YAML path -> 1-based line
};

// "a list", "a mapping", "an empty value" or the scalar in double quotes, for "got ..." texts.
std::string Describe(const YAML::Node& node);

// `parent.key`, or `parent["key"]` for keys that are not plain identifiers (variable names with
// dots, file names).
std::string JoinPath(const std::string& parent, const std::string& key);
std::string IndexPath(const std::string& parent, size_t index);

// Typed reads of one value at `path`; each fails naming the path and what was expected.
std::string ReadString(const ParseContext& context, const YAML::Node& node,
                       const std::string& path);
int64_t ReadInt(const ParseContext& context, const YAML::Node& node, const std::string& path,
                int64_t minimum, int64_t maximum);
bool ReadBool(const ParseContext& context, const YAML::Node& node, const std::string& path);
// Any number YAML can write (1.5, 1e9, .inf); the caller checks its range.
double ReadNumber(const ParseContext& context, const YAML::Node& node, const std::string& path);
// A scalar as text, or a list of scalars joined with "," (how optimizer options take pairs).
std::string ReadScalarOrList(const ParseContext& context, const YAML::Node& node,
                             const std::string& path);

// One mapping of the manifest. With a list of known keys, any other key is an error that lists
// them; without one (labels, file maps, options), every key is data. Keys must be strings and
// appear once.
class MapReader {
 public:
  struct Entry {
    std::string key;
    YAML::Node value;
    std::string path;
  };

  // A mapping whose keys are data.
  MapReader(ParseContext& context, const YAML::Node& node, std::string path);
  // A mapping of the fields `known` (listed in messages in this order).
  MapReader(ParseContext& context, const YAML::Node& node, std::string path,
            std::vector<std::string> known);

  const std::string& path() const { return path_; }
  const std::vector<Entry>& entries() const { return entries_; }
  std::string PathOf(const std::string& key) const { return JoinPath(path_, key); }
  bool Has(const std::string& key) const;

  // The value of `key`, or nullptr when absent.
  const YAML::Node* Find(const std::string& key) const;
  // The value of `key`; fails with "required field is missing" when absent.
  const YAML::Node& Require(const std::string& key) const;

  std::optional<std::string> String(const std::string& key) const;
  std::string RequireString(const std::string& key) const;
  std::optional<int64_t> Int(const std::string& key, int64_t minimum, int64_t maximum) const;
  int64_t RequireInt(const std::string& key, int64_t minimum, int64_t maximum) const;
  std::optional<bool> Bool(const std::string& key) const;

 private:
  void ReadEntries(const YAML::Node& node);
  void CheckKnown(const std::string& key) const;

  ParseContext& context_;
  std::string path_;
  std::optional<std::vector<std::string>> known_;
  std::vector<Entry> entries_;
};

// A mapping of string values (labels, annotations, graph input -> file), in manifest order.
std::vector<std::pair<std::string, std::string>> ReadStringPairs(ParseContext& context,
                                                                 const YAML::Node& node,
                                                                 const std::string& path);

}  // namespace autodist::config
