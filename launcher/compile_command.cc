// `autodist compile`: model + resources + builder -> Strategy, in text, JSON or binary.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "launcher/commands.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"
#include "runtime/graph/op_support.h"
#include "runtime/optim/optimizer.h"
#include "runtime/optim/optimizer_options.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/strategy_io.h"
#include "runtime/strategy/summary.h"

namespace autodist::cli {
namespace {

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  const size_t last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

// key=value pairs of the repeatable option `flag`.
std::map<std::string, std::string> ParseOptions(const std::vector<std::string>& pairs,
                                                const char* flag) {
  std::map<std::string, std::string> options;
  for (const std::string& pair : pairs) {
    const size_t equals = pair.find('=');
    AD_CHECK(equals != std::string::npos && equals > 0, kInvalidArgument,
             "{} expects key=value, got '{}'", flag, pair);
    const std::string key = Trim(pair.substr(0, equals));
    const auto [it, inserted] = options.emplace(key, Trim(pair.substr(equals + 1)));
    AD_CHECK(inserted, kInvalidArgument, "{} {} is given twice", flag, key);
  }
  return options;
}

strategy::ColocationGroups ParseColocation(const std::vector<std::string>& lists) {
  strategy::ColocationGroups groups;
  for (const std::string& list : lists) {
    std::vector<std::string> group;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t end = std::min(list.find(',', start), list.size());
      const std::string name = Trim(list.substr(start, end - start));
      AD_CHECK(!name.empty(), kInvalidArgument,
               "--colocate expects comma-separated variable names, got '{}'", list);
      group.push_back(name);
      start = end + 1;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

strategy::ResourceSpec LoadResources(const CompileOptions& options) {
  AD_CHECK(
      options.resources.empty() || !options.counts.has_value(), kInvalidArgument,
      "give either --resources or replica counts (--workers/--gpus-per-worker/--ps), not both");
  if (!options.resources.empty()) return strategy::ResourceSpec::FromYamlFile(options.resources);
  if (options.counts.has_value()) return strategy::ResourceSpec::FromReplicaCounts(*options.counts);
  // Nothing given: this machine, one CPU replica, as `autodist run` would use it.
  strategy::NodeSpec local;
  local.address = "localhost";
  return strategy::ResourceSpec::FromNodes({local}, "default resource spec");
}

}  // namespace

void RunCompile(const CompileOptions& options, std::ostream& out, std::ostream& err) {
  const strategy::StrategyFormat format = strategy::ParseStrategyFormat(options.format);
  AD_CHECK(format != strategy::StrategyFormat::kBinary || !options.output.empty() ||
               !options.stdout_is_terminal,
           kInvalidArgument,
           "binary output goes to a file (-o strategy.pb) or a pipe, not a terminal");

  const graph::GraphItem item = graph::GraphItem::Load(options.model);
  const strategy::ResourceSpec resources = LoadResources(options);
  // The replicas run on GPUs when the resources have any: every node needs a CUDA kernel then.
  if (!options.skip_kernel_check) {
    graph::CheckOpsSupported(item.ops(),
                             resources.NumGpus() > 0 ? graph::Backend::kCuda : graph::Backend::kCpu,
                             options.model);
  }
  const bool for_auto = options.builder == "Auto";
  AD_CHECK(for_auto || !options.allow_lossy_compression, kInvalidArgument,
           "--allow-lossy-compression is for --strategy Auto, which chooses among candidates; "
           "--strategy {} names the builder and its options",
           options.builder);
  AD_CHECK(options.batch_size > 0, kInvalidArgument, "--batch-size {}: expected at least 1",
           options.batch_size);
  AD_CHECK(options.network_bandwidth_gbps > 0, kInvalidArgument,
           "--network-bandwidth-gbps {}: expected a rate above 0", options.network_bandwidth_gbps);
  AD_CHECK(std::isfinite(options.network_latency_us) && options.network_latency_us >= 0,
           kInvalidArgument, "--network-latency-us {}: expected 0 or more microseconds",
           options.network_latency_us);
  const std::vector<graph::Variable> variables = item.TrainableVariables();
  strategy::CompileRequest request;
  request.builder = options.builder;
  request.options = ParseOptions(options.options, "--option");
  request.colocation = ParseColocation(options.colocate);
  request.batch_per_replica = options.batch_size;
  request.allow_lossy_compression = options.allow_lossy_compression;
  request.network.default_gbps = options.network_bandwidth_gbps;
  request.network.latency_seconds = options.network_latency_us * 1e-6;
  AD_CHECK(!options.optimizer.empty() || options.optimizer_options.empty(), kInvalidArgument,
           "--optimizer-option needs --optimizer, the optimizer it belongs to");
  if (!options.optimizer.empty()) {
    // What the manifest's spec.training.optimizer would say; key names as the optimizer's own
    // (lr, momentum, lazy_sparse).
    const optim::OptimizerOptions optimizer = optim::ParseOptimizerOptions(
        options.optimizer, ParseOptions(options.optimizer_options, "--optimizer-option"));
    request.optimizer.sparse_updates_change_only_present_rows =
        optim::SparseUpdatesChangeOnlyPresentRows(optimizer);
  }
  if (!options.profile.empty()) {
    request.profile = strategy::ReadStepProfile(options.profile);
    strategy::CheckProfileMatches(*request.profile, variables, 0, 0, options.profile);
  }

  strategy::CompileResult result = strategy::Compile(variables, resources, request);
  if (!options.output.empty()) result.strategy.set_path(options.output);

  std::string summary =
      strategy::FormatSummary(strategy::Summarize(result.strategy, variables, resources),
                              result.builder) +
      (result.note.empty() ? "" : result.note + "\n");
  if (options.explain) {
    // Auto's own inputs; a named builder's are derived here the same way.
    const strategy::AutoInputs inputs =
        for_auto ? result.auto_inputs : strategy::CostModelInputs(variables, resources, request);
    std::vector<strategy::RankedCandidate> ranking = result.ranking;
    if (!for_auto) {
      // A named builder: its one strategy, predicted by the same model.
      ranking.push_back({strategy::Candidate{options.builder, request.options},
                         strategy::PredictStep(result.strategy, variables, resources,
                                               inputs.profile, inputs.network, inputs.optimizer),
                         result.strategy});
    }
    summary = strategy::FormatRanking(ranking, inputs, resources, for_auto) + summary;
  }
  const std::string serialized = strategy::SerializeStrategy(result.strategy, format);
  if (options.output.empty()) {
    out << serialized;
    err << summary;
  } else {
    WriteFileBytes(options.output, serialized);
    out << summary
        << fmt::format("wrote strategy {} to {}\n", result.strategy.id(), options.output);
  }
}

}  // namespace autodist::cli
