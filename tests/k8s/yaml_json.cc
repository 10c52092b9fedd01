#include "tests/k8s/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include "runtime/common/error.h"

namespace autodist::k8s {
namespace {

nlohmann::json Convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = Convert(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& item : node) out.push_back(Convert(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() != "!") {  // "!" marks a quoted scalar
        if (text == "true" || text == "false") return text == "true";
        if (text == "null" || text == "~") return nullptr;
        nlohmann::json number = nlohmann::json::parse(text, nullptr, false);
        if (number.is_number()) return number;
      }
      return text;
    }
    default:
      return nullptr;
  }
}

}  // namespace

std::vector<nlohmann::json> ParseYamlDocuments(const std::string& text) {
  std::vector<nlohmann::json> out;
  try {
    for (const auto& doc : YAML::LoadAll(text)) {
      if (doc.IsNull()) continue;
      out.push_back(Convert(doc));
    }
  } catch (const YAML::Exception& e) {
    Fail(ErrorCode::kInvalidArgument, "YAML: {}", e.what());
  }
  return out;
}

}  // namespace autodist::k8s
