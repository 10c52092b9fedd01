// Shared by the `autodist run` tests: writing a job manifest into a private directory, running it
// in-process (RunJob spawns the real autodist-runtime members), and reading the checkpoint the
// chief wrote at the end.
#pragma once

#include <dirent.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "launcher/run_command.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "tests/launcher/launcher_test_util.h"
#include "tests/scoped_environment.h"

namespace autodist::launcher {

inline const std::string kParityDir = std::string(AUTODIST_FIXTURES_DIR) + "/parity/";

// The parts of a manifest the tests vary; the rest is fixed by JobYaml.
struct JobParams {
  std::string name = "parity";
  std::string model = "mlp";  // a parity fixture: mlp or embedding
  std::string builder = "PS";
  std::string strategy_options;  // YAML lines under spec.strategy.options, already indented
  int workers = 2;
  int replicas_per_worker = 1;
  int parameter_servers = 1;
  int batch = 8;  // per replica
  int steps = 5;
  std::string optimizer = "name: sgd\n      lr: 0.1\n      momentum: 0.9";
  std::string extra_training;   // YAML lines under spec.training
  std::string run_policy;       // YAML lines under spec.runPolicy
  std::string extra_resources;  // YAML lines under spec.resources
  bool eval = false;            // evaluate on the training files at the end
};

// The graph inputs of a parity fixture and their files, as YAML lines under data.train.
inline std::string TrainFiles(const std::string& model) {
  const std::string dir = kParityDir + model + "/";
  if (model == "embedding") {
    return fmt::format("      tokens: {0}tokens.npy\n      label: {0}label.npy\n", dir);
  }
  return fmt::format("      image: {0}image.npy\n      label: {0}label.npy\n", dir);
}

// A manifest training `params` with a checkpoint written at the end into `checkpoint_dir`.
inline std::string JobYaml(const JobParams& params, const std::string& checkpoint_dir) {
  std::string yaml = fmt::format(
      "apiVersion: autodist.io/v1alpha1\n"
      "kind: AutoDistJob\n"
      "metadata:\n"
      "  name: {}\n"
      "spec:\n"
      "  model:\n"
      "    path: {}\n"
      "  data:\n"
      "    format: files\n"
      "    train:\n{}{}"
      "    batchSizePerReplica: {}\n"
      "    shuffle: true\n"
      "    seed: 3\n"
      "  training:\n"
      "    steps: {}\n"
      "    optimizer:\n      {}\n"
      "    logIntervalSteps: 1\n"
      "    checkpoint:\n"
      "      path: {}\n"
      "      resume: false\n{}"
      "  strategy:\n"
      "    builder: {}\n",
      params.name, kParityDir + params.model + "/model.onnx", TrainFiles(params.model),
      params.eval ? "    eval:\n" + TrainFiles(params.model) : std::string(), params.batch,
      params.steps, params.optimizer, checkpoint_dir, params.extra_training, params.builder);
  if (!params.strategy_options.empty()) yaml += "    options:\n" + params.strategy_options;
  yaml += fmt::format(
      "  resources:\n"
      "    workers: {}\n"
      "    replicasPerWorker: {}\n"
      "    parameterServers: {}\n",
      params.workers, params.replicas_per_worker, params.parameter_servers);
  yaml += params.extra_resources;
  if (!params.run_policy.empty()) yaml += "  runPolicy:\n" + params.run_policy;
  return yaml;
}

struct RunOutcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline cli::RunOptions OptionsFor(const TempDir& dir, const std::string& manifest) {
  cli::RunOptions options;
  options.manifest = manifest;
  options.log_dir = dir / "logs";
  options.runtime = std::string(AUTODIST_BIN_DIR) + "/autodist-runtime";
  options.threads = 1;
  options.heartbeat_timeout = std::chrono::milliseconds(3000);
  options.stop_grace = std::chrono::milliseconds(2000);
  return options;
}

inline std::string WriteManifest(const TempDir& dir, const std::string& yaml) {
  const std::string path = dir / "job.yaml";
  std::ofstream(path) << yaml;
  return path;
}

inline RunOutcome RunManifest(const cli::RunOptions& options) {
  std::ostringstream out;
  std::ostringstream err;
  RunOutcome outcome;
  outcome.exit_code = cli::RunJob(options, out, err);
  outcome.out = out.str();
  outcome.err = err.str();
  if (outcome.exit_code != 0 && std::filesystem::is_directory(options.log_dir)) {
    // Every process's whole log, for the failure message of the test.
    for (const auto& entry : std::filesystem::directory_iterator(options.log_dir)) {
      if (entry.path().extension() != ".log") continue;
      outcome.err += "\n--- " + entry.path().string() + "\n" + ReadText(entry.path().string());
    }
  }
  return outcome;
}

// Processes whose command line mentions `needle` (the test's private directory).
inline std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> found;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmdline = ReadText("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(needle) != std::string::npos && ProcessAlive(pid)) found.push_back(pid);
  }
  closedir(proc);
  return found;
}

// The pid of the member `node` of the job whose manifest is `manifest`, once it runs; 0 when it
// has not started within a minute.
inline pid_t WaitForMember(const std::string& manifest, const std::string& node) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    for (pid_t pid : ProcessesMentioning(manifest + " --node " + node + " ")) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

// The variables of the latest checkpoint in `dir`, by name.
inline std::map<std::string, std::vector<float>> CheckpointVariables(const std::string& dir) {
  const auto path = checkpoint::LatestCheckpoint(dir);
  if (!path) throw std::runtime_error("no checkpoint in " + dir);
  const checkpoint::CheckpointReader checkpoint(*path);
  std::map<std::string, std::vector<float>> values;
  for (const auto& entry : checkpoint.variables()) {
    const tensor::Tensor t = checkpoint.Read(entry);
    values[entry.name] = std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  }
  return values;
}

using testing::ScopedEnvironment;

// Every variable of `got` within `relative` of `expected` (relative to max(1, |expected|)).
inline void ExpectSameVariables(const std::map<std::string, std::vector<float>>& expected,
                                const std::map<std::string, std::vector<float>>& got,
                                double relative) {
  ASSERT_EQ(expected.size(), got.size());
  for (const auto& [name, values] : expected) {
    ASSERT_TRUE(got.contains(name)) << name;
    const auto& other = got.at(name);
    ASSERT_EQ(values.size(), other.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_NEAR(other[i], values[i], relative * std::max(1.0F, std::abs(values[i])))
          << name << "[" << i << "]";
    }
  }
}

}  // namespace autodist::launcher
