// The readers of the manifest's sections, one per part of the spec; job_parser.cc puts them
// together and checks the rules that span sections. Internal to the job parser.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "runtime/config/yaml_reader.h"
#include "runtime/job/job_spec.h"

namespace autodist::job::detail {

// The manifest is read with the shared YAML reader.
using config::Describe;
using config::IndexPath;
using config::JoinPath;
using config::MapReader;
using config::ParseContext;
using config::ReadBool;
using config::ReadInt;
using config::ReadScalarOrList;
using config::ReadString;
using config::ReadStringPairs;

// Resolves a path from the manifest against its directory (absolute paths and an empty directory
// leave it as written).
class PathResolver {
 public:
  explicit PathResolver(std::string manifest_dir) : manifest_dir_(std::move(manifest_dir)) {}
  std::string Resolve(const std::string& path) const;

 private:
  std::string manifest_dir_;
};

// A non-empty string at `path`, resolved against the manifest's directory.
std::string ReadPath(const ParseContext& context, const YAML::Node& node, const std::string& path,
                     const PathResolver& resolver);

// A non-empty string at `path`.
std::string ReadNonEmptyString(const ParseContext& context, const YAML::Node& node,
                               const std::string& path);

// {name, key}: a ConfigMap and the key in it, `default_key` when none is given.
ConfigMapRef ReadConfigMapRef(ParseContext& context, const YAML::Node& node,
                              const std::string& path, const std::string& default_key);
JobMetadata ReadMetadata(ParseContext& context, const YAML::Node& node, const std::string& path);
ModelSpec ReadModel(ParseContext& context, const YAML::Node& node, const std::string& path,
                    const PathResolver& resolver);
DataSpec ReadData(ParseContext& context, const YAML::Node& node, const std::string& path,
                  const PathResolver& resolver);
TrainingSpec ReadTraining(ParseContext& context, const YAML::Node& node, const std::string& path,
                          const PathResolver& resolver);
StrategySpec ReadStrategy(ParseContext& context, const YAML::Node& node, const std::string& path,
                          const PathResolver& resolver);
ResourcesSpec ReadResources(ParseContext& context, const YAML::Node& node, const std::string& path);
RunPolicy ReadRunPolicy(ParseContext& context, const YAML::Node& node, const std::string& path);
// The pod template re-emitted as YAML text (strings that look like numbers stay strings).
std::string ReadPodTemplate(ParseContext& context, const YAML::Node& node, const std::string& path);

}  // namespace autodist::job::detail
