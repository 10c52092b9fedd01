// Compile time and peak memory of every builder for a synthetic model (default: 100,000
// variables on 64 nodes x 8 GPUs). Each builder runs in its own child process so its peak
// resident memory is its own; time is the median of --repeats compiles (build + content id +
// binary serialization). Targets (issue: foundation): < 1 s and < 500 MB per builder.
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/strategy/compiler.h"

namespace {

using autodist::graph::Variable;
using autodist::strategy::ResourceSpec;

// A transformer-like mix of shapes, repeated: weights, biases, layer norms, and every 500th
// variable a sparse embedding table. Dims are realistic (composite), so partitioning stays
// within a few shards per variable.
std::vector<Variable> SyntheticVariables(int count) {
  static const std::vector<std::vector<int64_t>> kShapes = {
      {1024, 1024}, {1024}, {4096, 1024}, {4096}, {1024, 4096}, {1024},  {768, 3072},
      {3072},       {768},  {512, 512},   {10},   {1000, 64},   {3, 64}, {}};
  std::vector<Variable> variables;
  variables.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Variable variable;
    variable.name = fmt::format("layer_{}/param_{}", i / 16, i % 16);
    variable.sparse = i % 500 == 499;
    variable.shape = variable.sparse ? std::vector<int64_t>{30522, 1024}
                                     : kShapes[static_cast<size_t>(i) % kShapes.size()];
    variable.bytes = autodist::graph::NumElements(variable.shape) * 4;
    variable.gradient_name = variable.name + "_grad";
    variables.push_back(std::move(variable));
  }
  return variables;
}

ResourceSpec SyntheticCluster(int nodes, int gpus_per_node) {
  std::vector<autodist::strategy::NodeSpec> specs;
  for (int n = 0; n < nodes; ++n) {
    autodist::strategy::NodeSpec node;
    node.address = fmt::format("10.1.{}.{}", n / 250, n % 250 + 1);
    node.cpus = {0};
    for (int g = 0; g < gpus_per_node; ++g) node.gpus.push_back(g);
    node.chief = n == 0;
    specs.push_back(node);
  }
  return ResourceSpec::FromNodes(specs, "synthetic cluster");
}

long PeakRssKiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

struct Measurement {
  double median_seconds = 0;
  long peak_rss_kib = 0;
  long input_rss_kib = 0;  // peak before compiling: the variable table and cluster alone
  int shards = 0;
};

// Runs in the child process.
Measurement Measure(const std::string& builder, int variables_count, int nodes, int gpus,
                    int repeats) {
  const std::vector<Variable> variables = SyntheticVariables(variables_count);
  const ResourceSpec resources = SyntheticCluster(nodes, gpus);
  Measurement measurement;
  measurement.input_rss_kib = PeakRssKiB();
  std::vector<double> seconds;
  autodist::strategy::CompileRequest request;
  request.builder = builder;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const auto result = autodist::strategy::Compile(variables, resources, request);
    std::string bytes;
    result.strategy.SerializeToString(&bytes);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    measurement.shards = 0;
    for (const auto& node : result.strategy.node_config()) {
      measurement.shards += std::max(1, node.part_config_size());
    }
  }
  std::sort(seconds.begin(), seconds.end());
  measurement.median_seconds = seconds[seconds.size() / 2];
  measurement.peak_rss_kib = PeakRssKiB();
  return measurement;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Strategy compiler benchmark"};
  int variables = 100000;
  int nodes = 64;
  int gpus = 8;
  int repeats = 5;
  app.add_option("--variables", variables, "Number of variables")->check(CLI::PositiveNumber);
  app.add_option("--nodes", nodes, "Number of nodes")->check(CLI::PositiveNumber);
  app.add_option("--gpus-per-node", gpus, "GPUs per node")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", repeats, "Compiles per builder (median reported)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  fmt::print("compile benchmark: {} variables, {} nodes x {} GPUs, median of {}\n", variables,
             nodes, gpus, repeats);
  fmt::print("{:<22} {:>10} {:>14} {:>16} {:>9}  {}\n", "builder", "time [ms]", "peak RSS [MB]",
             "input RSS [MB]", "shards", "within target (<1 s, <500 MB)");
  bool all_ok = true;
  for (const std::string& builder : autodist::strategy::BuilderNames()) {
    std::array<int, 2> pipe_fds{};
    if (pipe(pipe_fds.data()) != 0) return 1;
    const pid_t child = fork();
    if (child == 0) {
      close(pipe_fds[0]);
      const Measurement m = Measure(builder, variables, nodes, gpus, repeats);
      const ssize_t written = write(pipe_fds[1], &m, sizeof(m));
      _exit(written == static_cast<ssize_t>(sizeof(m)) ? 0 : 1);
    }
    close(pipe_fds[1]);
    Measurement m;
    const ssize_t got = read(pipe_fds[0], &m, sizeof(m));
    close(pipe_fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (got != static_cast<ssize_t>(sizeof(m)) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fmt::print(stderr, "{}: the measuring process failed\n", builder);
      return 1;
    }
    const double peak_mb = static_cast<double>(m.peak_rss_kib) / 1024.0;
    const bool ok = m.median_seconds < 1.0 && peak_mb < 500.0;
    all_ok &= ok;
    fmt::print("{:<22} {:>10.1f} {:>14.1f} {:>16.1f} {:>9}  {}\n", builder,
               m.median_seconds * 1000.0, peak_mb, static_cast<double>(m.input_rss_kib) / 1024.0,
               m.shards, ok ? "yes" : "NO");
  }
  fmt::print("{}\n", all_ok ? "all builders within target" : "some builders missed the target");
  return 0;
}
