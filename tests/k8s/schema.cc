#include "tests/k8s/schema.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <regex>

namespace autodist::k8s {
namespace {

class Walker {
 public:
  explicit Walker(SchemaReport& report) : report_(report) {}

  void Apply(const nlohmann::json& schema, nlohmann::json& value, const std::string& path) {
    if (!schema.is_object()) return;
    if (value.is_null()) {
      if (!schema.value("nullable", false)) Invalid(path, value, "must not be null");
      return;
    }
    if (!CheckType(schema, value, path)) return;
    CheckEnum(schema, value, path);
    CheckBounds(schema, value, path);
    if (value.is_object()) ApplyObject(schema, value, path);
    if (value.is_array() && schema.contains("items")) {
      for (size_t i = 0; i < value.size(); ++i) {
        Apply(schema["items"], value[i], fmt::format("{}[{}]", path, i));
      }
    }
  }

  void ApplyObject(const nlohmann::json& schema, nlohmann::json& value, const std::string& path) {
    const bool preserve = schema.value("x-kubernetes-preserve-unknown-fields", false) ||
                          schema.value("x-kubernetes-embedded-resource", false);
    // Looked up, not schema.value(...): that returns a copy, of the whole schema at the root.
    static const nlohmann::json kNone = nlohmann::json::object();
    const auto found_props = schema.find("properties");
    const nlohmann::json& props = found_props != schema.end() ? *found_props : kNone;
    // Defaults first: a defaulted field is then validated like a given one.
    for (const auto& [name, sub] : props.items()) {
      if (!value.contains(name) && sub.is_object() && sub.contains("default")) {
        value[name] = sub["default"];
      }
    }
    // Nulls in non-nullable fields are dropped, as the server's defaulting does.
    for (const auto& [name, sub] : props.items()) {
      if (value.contains(name) && value[name].is_null() && !sub.value("nullable", false)) {
        value.erase(name);
      }
    }
    if (const auto required = schema.find("required");
        required != schema.end() && required->is_array()) {
      for (const auto& name : *required) {
        if (!value.contains(name.get<std::string>())) {
          Cause("FieldValueRequired", Join(path, name.get<std::string>()), "Required value");
        }
      }
    }
    const nlohmann::json* additional = nullptr;
    if (schema.contains("additionalProperties")) additional = &schema["additionalProperties"];
    std::vector<std::string> unknown;
    for (auto& [name, child] : value.items()) {
      const std::string child_path = Join(path, name);
      if (const auto sub = props.find(name); sub != props.end()) {
        Apply(*sub, child, child_path);
      } else if (additional != nullptr && additional->is_object()) {
        Apply(*additional, child, child_path);
      } else if (!preserve &&
                 !(additional != nullptr && additional->is_boolean() && additional->get<bool>())) {
        unknown.push_back(name);
      }
    }
    for (const auto& name : unknown) {
      report_.unknown_fields.push_back(Join(path, name));
      value.erase(name);
    }
  }

 private:
  static std::string Join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }

  void Cause(const char* reason, const std::string& field, const std::string& message) {
    report_.causes.push_back(
        {{"reason", reason}, {"message", fmt::format("{}: {}", field, message)}, {"field", field}});
  }

  void Invalid(const std::string& path, const nlohmann::json& value, const std::string& why) {
    Cause("FieldValueInvalid", path,
          fmt::format("Invalid value: {}: {} in body {}", value.dump(), path, why));
  }

  bool CheckType(const nlohmann::json& schema, const nlohmann::json& value,
                 const std::string& path) {
    if (schema.value("x-kubernetes-int-or-string", false)) {
      if (value.is_number_integer() || value.is_string()) return true;
      Invalid(path, value, "must be of type int-or-string");
      return false;
    }
    const std::string type = schema.value("type", std::string());
    bool ok = true;
    if (type == "string") ok = value.is_string();
    if (type == "integer") ok = value.is_number_integer();
    if (type == "number") ok = value.is_number();
    if (type == "boolean") ok = value.is_boolean();
    if (type == "object") ok = value.is_object();
    if (type == "array") ok = value.is_array();
    if (!ok) {
      const char* got = value.is_string()    ? "string"
                        : value.is_boolean() ? "boolean"
                        : value.is_number()  ? (value.is_number_integer() ? "integer" : "number")
                        : value.is_array()   ? "array"
                                             : "object";
      Invalid(path, value, fmt::format("must be of type {}: \"{}\"", type, got));
    }
    return ok;
  }

  void CheckEnum(const nlohmann::json& schema, const nlohmann::json& value,
                 const std::string& path) {
    if (!schema.contains("enum") || !schema["enum"].is_array()) return;
    for (const auto& allowed : schema["enum"]) {
      if (allowed == value) return;
    }
    std::string list;
    for (const auto& allowed : schema["enum"]) list += (list.empty() ? "" : ", ") + allowed.dump();
    Cause("FieldValueNotSupported", path,
          fmt::format("Unsupported value: {}: supported values: {}", value.dump(), list));
  }

  void CheckBounds(const nlohmann::json& schema, const nlohmann::json& value,
                   const std::string& path) {
    if (value.is_number()) {
      const double v = value.get<double>();
      if (schema.contains("minimum")) {
        const double min = schema["minimum"].get<double>();
        const bool exclusive = schema.value("exclusiveMinimum", false);
        if (exclusive ? v <= min : v < min) {
          Invalid(path, value,
                  fmt::format("should be greater than {}{}", exclusive ? "" : "or equal to ",
                              schema["minimum"].dump()));
        }
      }
      if (schema.contains("maximum")) {
        const double max = schema["maximum"].get<double>();
        const bool exclusive = schema.value("exclusiveMaximum", false);
        if (exclusive ? v >= max : v > max) {
          Invalid(path, value,
                  fmt::format("should be less than {}{}", exclusive ? "" : "or equal to ",
                              schema["maximum"].dump()));
        }
      }
    }
    if (value.is_string()) {
      const auto size = value.get<std::string>().size();
      if (schema.contains("minLength") && size < schema["minLength"].get<size_t>()) {
        Invalid(path, value, fmt::format("should be at least {} chars long", schema["minLength"]));
      }
      if (schema.contains("maxLength") && size > schema["maxLength"].get<size_t>()) {
        Cause("FieldValueTooLong", path,
              fmt::format("Too long: may not be more than {} bytes", schema["maxLength"].dump()));
      }
      if (schema.contains("pattern") && schema["pattern"].is_string())
        CheckPattern(schema, value, path);
    }
    if (value.is_array()) {
      if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
        Invalid(path, value, fmt::format("should have at least {} items", schema["minItems"]));
      }
      if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
        Cause("FieldValueTooMany", path,
              fmt::format("Too many: {}: must have at most {} items", value.size(),
                          schema["maxItems"].dump()));
      }
    }
  }

  void CheckPattern(const nlohmann::json& schema, const nlohmann::json& value,
                    const std::string& path) {
    const std::regex* re = CompiledPattern(schema["pattern"].get<std::string>());
    if (re != nullptr && !std::regex_search(value.get<std::string>(), *re)) {
      Invalid(path, value, fmt::format("should match '{}'", schema["pattern"].get<std::string>()));
    }
  }

  // ECMAScript regex stands in for Go's RE2; a pattern it cannot compile is not checked (null).
  // Compiled once per pattern for the process: compiling one costs more than walking a whole
  // object against its schema, and every write of a custom resource is walked.
  static const std::regex* CompiledPattern(const std::string& pattern) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<const std::regex>> compiled;
    std::lock_guard lock(mutex);
    auto [it, inserted] = compiled.try_emplace(pattern);
    if (inserted) {
      try {
        it->second = std::make_unique<const std::regex>(pattern);
      } catch (const std::regex_error&) {
        // Stays null: not checked.
      }
    }
    return it->second.get();
  }

  SchemaReport& report_;
};

}  // namespace

SchemaReport ApplySchema(const nlohmann::json& schema, nlohmann::json& object) {
  SchemaReport report;
  if (!schema.is_object() || !object.is_object()) return report;
  // The envelope (apiVersion, kind, metadata) is not subject to the schema.
  nlohmann::json envelope = nlohmann::json::object();
  for (const char* key : {"apiVersion", "kind", "metadata"}) {
    if (object.contains(key)) {
      envelope[key] = std::move(object[key]);
      object.erase(key);
    }
  }
  Walker(report).ApplyObject(schema, object, "");
  for (auto& [key, value] : envelope.items()) object[key] = std::move(value);
  return report;
}

}  // namespace autodist::k8s
