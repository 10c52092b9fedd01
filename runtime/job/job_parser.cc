#include "runtime/job/job_parser.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/config/yaml_reader.h"
#include "runtime/job/builder_check.h"
#include "runtime/job/parse_sections.h"

namespace autodist::job {
namespace {

using config::MapReader;
using config::ParseContext;

// Rules that span sections.
void CheckAcrossSections(const ParseContext& context, const JobSpec& job) {
  // The strategy is already validated, so this does not throw.
  const BuilderPlacement placement =
      CheckBuilderOptions(job.strategy.builder, job.strategy.options);
  if (placement == BuilderPlacement::kAllReduce && job.resources.parameter_servers > 0) {
    context.Fail("spec.resources.parameterServers",
                 "builder {} all-reduces every variable, so no variable would live on the {} "
                 "parameter server(s); set parameterServers to 0 or use a PS-family builder (PS, "
                 "PSLoadBalancing, PartitionedPS, UnevenPartitionedPS, Parallax)",
                 job.strategy.builder, job.resources.parameter_servers);
  }
  if (job.training.precision != ops::Precision::kFp32 && job.resources.gpus_per_worker == 0) {
    context.Fail("spec.training.precision",
                 "{} is for GPUs, and the job asks for none (spec.resources.gpusPerWorker is 0); "
                 "the CPUs compute fp32",
                 ops::PrecisionName(job.training.precision));
  }
}

JobSpec ParseDocument(const YAML::Node& document, const std::string& source,
                      const std::string& manifest_dir) {
  ParseContext context(source);
  const MapReader root(context, document, "", {"apiVersion", "kind", "metadata", "spec", "status"});
  const std::string api_version = root.RequireString("apiVersion");
  if (api_version != kApiVersion) {
    context.Fail("apiVersion", R"(expected "{}", got "{}")", kApiVersion, api_version);
  }
  const std::string kind = root.RequireString("kind");
  if (kind != kKind) context.Fail("kind", R"(expected "{}", got "{}")", kKind, kind);
  // `status` belongs to the operator: objects read back from the cluster carry one; it is ignored.

  JobSpec job;
  job.manifest_dir = manifest_dir;
  job.metadata = detail::ReadMetadata(context, root.Require("metadata"), "metadata");

  const detail::PathResolver resolver(manifest_dir);
  const MapReader spec(
      context, root.Require("spec"), "spec",
      {"model", "data", "training", "strategy", "resources", "runPolicy", "template"});
  job.model = detail::ReadModel(context, spec.Require("model"), spec.PathOf("model"), resolver);
  job.data = detail::ReadData(context, spec.Require("data"), spec.PathOf("data"), resolver);
  job.training =
      detail::ReadTraining(context, spec.Require("training"), spec.PathOf("training"), resolver);
  if (const YAML::Node* strategy = spec.Find("strategy")) {
    job.strategy = detail::ReadStrategy(context, *strategy, spec.PathOf("strategy"), resolver);
  }
  if (const YAML::Node* resources = spec.Find("resources")) {
    job.resources = detail::ReadResources(context, *resources, spec.PathOf("resources"));
  }
  if (const YAML::Node* policy = spec.Find("runPolicy")) {
    job.run_policy = detail::ReadRunPolicy(context, *policy, spec.PathOf("runPolicy"));
  }
  if (const YAML::Node* pod_template = spec.Find("template")) {
    job.pod_template = detail::ReadPodTemplate(context, *pod_template, spec.PathOf("template"));
  }
  CheckAcrossSections(context, job);
  return job;
}

// `manifest_dir` made absolute, then the document parsed.
JobSpec ParseDocumentIn(const YAML::Node& document, const std::string& source,
                        const std::string& manifest_dir) {
  std::string directory;
  if (!manifest_dir.empty()) {
    directory = std::filesystem::absolute(manifest_dir).lexically_normal().string();
    if (directory.size() > 1 && directory.back() == '/') directory.pop_back();
  }
  try {
    return ParseDocument(document, source, directory);
  } catch (const YAML::Exception& e) {
    // The readers check node types before converting, so this is a case they did not foresee;
    // it still reaches the caller as our error type.
    Fail(ErrorCode::kInvalidArgument, "{}: {}", source, e.what());
  }
}

// The YAML document that parsing `value.dump()` would give, built directly: scalars carry the
// text JSON writes for them (numbers as dumped, booleans as true/false), null is YAML's null.
YAML::Node ToYaml(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      YAML::Node map(YAML::NodeType::Map);
      for (const auto& [key, item] : value.items()) map.force_insert(key, ToYaml(item));
      return map;
    }
    case nlohmann::json::value_t::array: {
      YAML::Node sequence(YAML::NodeType::Sequence);
      for (const auto& item : value) sequence.push_back(ToYaml(item));
      return sequence;
    }
    case nlohmann::json::value_t::string:
      return YAML::Node(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      return YAML::Node(value.get<bool>() ? "true" : "false");
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return YAML::Node(value.dump());
    default:
      return YAML::Node(YAML::NodeType::Null);
  }
}

}  // namespace

JobSpec ParseJob(const std::string& yaml_text, const std::string& source,
                 const std::string& manifest_dir) {
  const std::vector<YAML::Node> documents = config::LoadYamlDocuments(yaml_text, source);
  if (documents.empty() || documents.front().IsNull()) {
    Fail(ErrorCode::kInvalidArgument, "{}: the manifest is empty; expected an {} ({})", source,
         kKind, kApiVersion);
  }
  if (documents.size() > 1) {
    Fail(ErrorCode::kInvalidArgument, "{}: expected one YAML document (one {}), got {}", source,
         kKind, documents.size());
  }
  return ParseDocumentIn(documents.front(), source, manifest_dir);
}

JobSpec ParseJobJson(const nlohmann::json& object, const std::string& source,
                     const std::string& manifest_dir) {
  if (!object.is_object()) return ParseDocumentIn(ToYaml(object), source, manifest_dir);
  // ToYaml's object case, except that the status, the operator's and ignored by the parser, is
  // not converted.
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& [key, item] : object.items()) {
    root.force_insert(key, key == "status" ? YAML::Node(YAML::NodeType::Map) : ToYaml(item));
  }
  return ParseDocumentIn(root, source, manifest_dir);
}

JobSpec LoadJobFile(const std::string& path) {
  const std::string text = ReadFileBytes(path, "job manifest");
  const std::filesystem::path directory = std::filesystem::absolute(path).parent_path();
  return ParseJob(text, path, directory.string());
}

}  // namespace autodist::job
