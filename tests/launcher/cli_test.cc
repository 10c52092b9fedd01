// End-to-end tests of the `autodist` binary: each test runs it as a subprocess and checks the
// exit code, standard output and standard error separately.
#include <fcntl.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "proto/strategy.pb.h"

namespace autodist::cli {
namespace {

namespace fs = std::filesystem;
using autodist::proto::Strategy;

const std::string kAutodist = std::string(AUTODIST_BIN_DIR) + "/autodist";

std::string Model(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/models/" + name;
}

std::string Spec(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/resource_specs/" + name;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

size_t CountOf(const std::string& text, const std::string& fragment) {
  size_t count = 0;
  for (size_t at = text.find(fragment); at != std::string::npos;
       at = text.find(fragment, at + fragment.size())) {
    ++count;
  }
  return count;
}

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string out;
  std::string err;
};

// Each test gets its own scratch directory; the binary runs with it as working directory and
// its standard output and error go to two files there (stdin is /dev/null, so no terminal).
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kAutodist)) << kAutodist << " is not built";
    std::string pattern = (fs::temp_directory_path() / "autodist_cli_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }

  void TearDown() override {
    std::error_code ignored;
    if (!dir_.empty()) fs::remove_all(dir_, ignored);
  }

  RunResult Run(const std::vector<std::string>& args) const {
    const fs::path out_path = dir_ / ".stdout";
    const fs::path err_path = dir_ / ".stderr";
    std::vector<std::string> storage = {kAutodist};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : storage) argv.push_back(arg.data());
    argv.push_back(nullptr);

    const pid_t pid = fork();
    if (pid == 0) {
      const int in = open("/dev/null", O_RDONLY);
      const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
          chdir(dir_.c_str()) != 0) {
        _exit(127);
      }
      execv(argv[0], argv.data());
      _exit(127);
    }
    RunResult result;
    if (pid < 0) {
      ADD_FAILURE() << "fork failed";
      return result;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) {
      ADD_FAILURE() << "waitpid failed";
      return result;
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
    result.out = ReadFile(out_path);
    result.err = ReadFile(err_path);
    return result;
  }

  // Runs `compile --model <model> <args...>`, expecting success.
  RunResult Compile(const std::string& model, const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"compile", "--model", model};
    all.insert(all.end(), args.begin(), args.end());
    RunResult result = Run(all);
    EXPECT_EQ(result.exit_code, 0) << "stderr: " << result.err;
    return result;
  }

  // Expects exit code 2, nothing on stdout, and exactly one "autodist: error:" message on
  // stderr containing every fragment. Single-line unless `multi_line_ok`.
  void ExpectUserError(const std::vector<std::string>& args,
                       const std::vector<std::string>& fragments, bool multi_line_ok = false) {
    const RunResult result = Run(args);
    EXPECT_EQ(result.exit_code, 2) << "stderr: " << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("autodist: error: ", 0), 0u) << result.err;
    EXPECT_EQ(CountOf(result.err, "error"), 1u) << result.err;
    if (!multi_line_ok) {
      EXPECT_EQ(CountOf(result.err, "\n"), 1u) << result.err;
    }
    for (const std::string& fragment : fragments) {
      EXPECT_TRUE(Contains(result.err, fragment))
          << "expected '" << fragment << "' in: " << result.err;
    }
  }

  // The minimal manifest (tests/fixtures/jobs/minimal.yaml) of job `name` with `model` and
  // `workers`, as <dir>/<name>.yaml; returns its path.
  std::string WriteMinimalManifest(const std::string& name, const std::string& model,
                                   int workers) const {
    const std::string manifest = (dir_ / (name + ".yaml")).string();
    std::ofstream(manifest) << "apiVersion: autodist.io/v1alpha1\nkind: AutoDistJob\n"
                               "metadata:\n  name: "
                            << name << "\nspec:\n  model:\n    path: " << model
                            << "\n  data:\n    format: fashion-mnist\n    batchSizePerReplica: 16\n"
                               "  training:\n    epochs: 1\n    optimizer:\n      name: sgd\n"
                               "      lr: 0.1\n  resources:\n    workers: "
                            << workers << "\n";
    return manifest;
  }

  fs::path dir_;
};

Strategy ParseText(const std::string& text) {
  Strategy strategy;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &strategy)) << text;
  return strategy;
}

Strategy ParseBinary(const std::string& bytes) {
  Strategy strategy;
  EXPECT_TRUE(strategy.ParseFromString(bytes));
  return strategy;
}

Strategy ParseJson(const std::string& json) {
  Strategy strategy;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &strategy);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << json;
  return strategy;
}

bool SameMessage(const Strategy& a, const Strategy& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

std::vector<std::string> Destinations(const Strategy& strategy) {
  std::vector<std::string> out;
  for (const auto& node : strategy.node_config()) {
    out.push_back(node.pssynchronizer().reduction_destination());
  }
  return out;
}

// ---- inspect ----------------------------------------------------------------------------------

TEST_F(CliTest, InspectListsEveryMlpVariable) {
  const RunResult result = Run({"inspect", Model("mlp.onnx")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  // 784 -> 256 -> 128 -> 10 float32 layers; bytes are elements x 4.
  const std::vector<std::string> rows = {
      R"(fc1\.weight +\[256, 784\] +float +802816 +dense +yes +yes)",
      R"(fc1\.bias +\[256\] +float +1024 +dense +yes +yes)",
      R"(fc2\.weight +\[128, 256\] +float +131072 +dense +yes +yes)",
      R"(fc2\.bias +\[128\] +float +512 +dense +yes +yes)",
      R"(fc3\.weight +\[10, 128\] +float +5120 +dense +yes +yes)",
      R"(fc3\.bias +\[10\] +float +40 +dense +yes +yes)",
  };
  std::vector<std::string> lines;
  std::istringstream stream(result.out);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), rows.size() + 2) << result.out;
  EXPECT_TRUE(std::regex_search(lines[0], std::regex("^NAME +SHAPE +DTYPE +BYTES +GRADIENT")));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i + 1], std::regex(rows[i])))
        << "row " << i << ": " << lines[i + 1];
  }
  // Total: 802816 + 1024 + 131072 + 512 + 5120 + 40.
  EXPECT_TRUE(Contains(lines[rows.size() + 1], "6 variables (6 trainable, 0 sparse)"));
  EXPECT_TRUE(Contains(lines[rows.size() + 1], "(940584 bytes)"));
}

TEST_F(CliTest, InspectShowsTheEmbeddingTableAsSparse) {
  const RunResult result = Run({"inspect", Model("embedding.onnx")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // A [1000, 64] table read only through Gather: sparse; the classifier is dense.
  EXPECT_TRUE(std::regex_search(
      result.out, std::regex(R"(embedding\.weight +\[1000, 64\] +float +256000 +sparse)")))
      << result.out;
  EXPECT_TRUE(std::regex_search(result.out, std::regex(R"(fc\.weight +\[10, 64\] .* dense)")));
  EXPECT_TRUE(Contains(result.out, "3 variables (3 trainable, 1 sparse)"));
}

TEST_F(CliTest, StrippedGraphItemIsSmallAndCompilesToTheSameStrategy) {
  const int64_t model_size = static_cast<int64_t>(fs::file_size(Model("mlp.onnx")));
  const RunResult inspect = Run({"inspect", "--strip-weights", "-o", "g.pb", Model("mlp.onnx")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  ASSERT_TRUE(fs::exists(dir_ / "g.pb"));
  const int64_t stripped_size = static_cast<int64_t>(fs::file_size(dir_ / "g.pb"));
  // The weights are ~940 KB; structure alone is a few KB at most.
  EXPECT_GT(stripped_size, 0);
  EXPECT_LT(stripped_size * 50, model_size) << stripped_size << " vs " << model_size;
  EXPECT_TRUE(Contains(inspect.out, "g.pb"));

  // The stripped item has the same variable table...
  const RunResult reinspect = Run({"inspect", "g.pb"});
  ASSERT_EQ(reinspect.exit_code, 0) << reinspect.err;
  const RunResult original = Run({"inspect", Model("mlp.onnx")});
  EXPECT_EQ(reinspect.out, original.out);

  // ...and compiles to the same strategy bytes.
  const std::vector<std::string> args = {
      "--resources", Spec("several_ps.yml"), "--strategy", "PartitionedPS", "--format", "binary"};
  const RunResult from_onnx = Compile(Model("mlp.onnx"), args);
  const RunResult from_item = Compile("g.pb", args);
  EXPECT_FALSE(from_onnx.out.empty());
  EXPECT_EQ(from_item.out, from_onnx.out);
}

// A model with ONNX external data: inspect and compile read it like the inline one, and the
// stripped GraphItem (the operator's ConfigMap) needs no data file.
TEST_F(CliTest, ExternalDataModelInspectsStripsAndCompilesLikeItsInlineTwin) {
  const RunResult inline_model = Run({"inspect", Model("cnn.onnx")});
  const RunResult external = Run({"inspect", Model("external/cnn.onnx")});
  ASSERT_EQ(external.exit_code, 0) << external.err;
  EXPECT_EQ(external.out, inline_model.out);
  const RunResult strip =
      Run({"inspect", "--strip-weights", "-o", "g.pb", Model("external/cnn.onnx")});
  ASSERT_EQ(strip.exit_code, 0) << strip.err;
  EXPECT_LT(fs::file_size(dir_ / "g.pb"), 10000U);
  const std::vector<std::string> args = {
      "--resources", Spec("several_ps.yml"), "--strategy", "PartitionedPS", "--format", "binary"};
  EXPECT_EQ(Compile("g.pb", args).out, Compile(Model("cnn.onnx"), args).out);
}

TEST_F(CliTest, ExternalDataFileMissingIsAUserErrorNamingIt) {
  fs::copy_file(Model("external/cnn.onnx"), dir_ / "cnn.onnx");
  ExpectUserError(
      {"inspect", (dir_ / "cnn.onnx").string()},
      {"initializer 'conv2.weight'", (dir_ / "cnn.onnx.data").string(), "does not exist"});
}

TEST_F(CliTest, InspectOfAMissingFileIsAUserError) {
  ExpectUserError({"inspect", "missing.onnx"}, {"missing.onnx"});
}

// ---- compile: formats and streams ------------------------------------------------------------

TEST_F(CliTest, EveryFormatParsesBackToTheSameStrategy) {
  const std::vector<std::string> args = {"--resources", Spec("several_ps.yml"), "--strategy",
                                         "PSLoadBalancing"};
  auto with_format = [&](const std::string& format) {
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--format", format});
    return Compile(Model("mlp.onnx"), all);
  };
  const RunResult text = with_format("text");
  const RunResult json = with_format("json");
  const RunResult binary = with_format("binary");

  const Strategy from_text = ParseText(text.out);
  const Strategy from_json = ParseJson(json.out);
  const Strategy from_binary = ParseBinary(binary.out);
  EXPECT_TRUE(SameMessage(from_text, from_binary));
  EXPECT_TRUE(SameMessage(from_json, from_binary));

  // Greedy by bytes over three servers (see builders_on_models_test for the arithmetic).
  const std::string a = "192.168.0.1:CPU:0", b = "192.168.0.2:CPU:0", c = "192.168.0.3:CPU:0";
  EXPECT_EQ(Destinations(from_binary), (std::vector<std::string>{a, b, c, b, b, b}));
  EXPECT_EQ(from_binary.graph_config().replicas_size(), 3);
  EXPECT_EQ(from_binary.id().rfind("strategy-", 0), 0u);
  EXPECT_EQ(from_binary.path(), "");

  // JSON keeps AutoDist's field names (not lowerCamelCase).
  for (const char* name : {"\"var_name\"", "\"PSSynchronizer\"", "\"reduction_destination\"",
                           "\"graph_config\"", "\"node_config\""}) {
    EXPECT_TRUE(Contains(json.out, name)) << name << " missing from " << json.out;
  }
  EXPECT_FALSE(Contains(json.out, "\"varName\""));
}

TEST_F(CliTest, StdoutHoldsOnlyTheStrategyAndTheSummaryGoesToStderr) {
  const RunResult result =
      Compile(Model("mlp.onnx"), {"--resources", Spec("several_ps.yml"), "--strategy", "PS"});
  EXPECT_FALSE(Contains(result.out, "builder:"));
  EXPECT_FALSE(Contains(result.out, "bytes per parameter server"));
  EXPECT_TRUE(Contains(result.err, "builder: PS\n"));
  EXPECT_TRUE(Contains(result.err, "bytes per parameter server"));
  // PS puts all 940584 bytes on the first server.
  EXPECT_TRUE(Contains(result.err, "192.168.0.1:CPU:0: 918.5 KiB (940584 bytes)")) << result.err;
  // The whole of stdout is the strategy: it parses, and re-printing it gives the same text.
  const Strategy strategy = ParseText(result.out);
  std::string reprinted;
  google::protobuf::TextFormat::PrintToString(strategy, &reprinted);
  EXPECT_EQ(reprinted, result.out);
}

TEST_F(CliTest, OutputFileHoldsTheStrategyWithItsPathAndStdoutTheSummary) {
  for (const std::string format : {"text", "json", "binary"}) {
    SCOPED_TRACE(format);
    const std::string file = "strategy." + format;
    // The embedding model's Gather has no CUDA kernel yet: the plan is compiled all the same.
    const RunResult result =
        Compile(Model("embedding.onnx"),
                {"--resources", Spec("one_node_two_gpus.yml"), "--strategy", "Parallax", "--format",
                 format, "-o", file, "--skip-kernel-check"});
    EXPECT_EQ(result.err, "");
    EXPECT_TRUE(Contains(result.out, "builder: Parallax")) << result.out;
    EXPECT_TRUE(Contains(result.out, file));
    const std::string bytes = ReadFile(dir_ / file);
    const Strategy strategy = format == "text"   ? ParseText(bytes)
                              : format == "json" ? ParseJson(bytes)
                                                 : ParseBinary(bytes);
    EXPECT_EQ(strategy.path(), file);
    EXPECT_TRUE(Contains(result.out, strategy.id()));
    ASSERT_EQ(strategy.node_config_size(), 3);
    EXPECT_TRUE(strategy.node_config(0).has_pssynchronizer());
    EXPECT_TRUE(strategy.node_config(1).has_allreducesynchronizer());
  }
}

TEST_F(CliTest, CompilingTwiceGivesIdenticalBytes) {
  for (const std::string format : {"text", "binary"}) {
    const std::vector<std::string> args = {"--resources", Spec("two_nodes_uneven_gpus.yml"),
                                           "--strategy",  "RandomAxisPartitionAR",
                                           "--format",    format};
    const RunResult first = Compile(Model("cnn.onnx"), args);
    const RunResult second = Compile(Model("cnn.onnx"), args);
    EXPECT_FALSE(first.out.empty());
    EXPECT_EQ(first.out, second.out) << format;
  }
}

// ---- compile: options reach the strategy -----------------------------------------------------

TEST_F(CliTest, SyncFalseReachesEveryPsSynchronizer) {
  const Strategy strategy =
      ParseText(Compile(Model("mlp.onnx"), {"--strategy", "PS", "--option", "sync=false"}).out);
  ASSERT_EQ(strategy.node_config_size(), 6);
  for (const auto& node : strategy.node_config()) {
    ASSERT_TRUE(node.has_pssynchronizer());
    EXPECT_FALSE(node.pssynchronizer().sync());
  }
}

TEST_F(CliTest, StalenessReachesEveryPsSynchronizer) {
  const Strategy strategy =
      ParseText(Compile(Model("mlp.onnx"), {"--strategy", "PSLoadBalancing", "--option",
                                            "staleness=2", "--option", "sync=true"})
                    .out);
  ASSERT_EQ(strategy.node_config_size(), 6);
  for (const auto& node : strategy.node_config()) {
    EXPECT_TRUE(node.pssynchronizer().sync());
    EXPECT_EQ(node.pssynchronizer().staleness(), 2);
  }
}

TEST_F(CliTest, ColocatedVariablesShareAServer) {
  // Without colocation fc3.bias goes to b (see EveryFormat...). Grouped with fc1.weight, the
  // group (802816 + 40 bytes) is placed on a when fc1.weight is reached:
  //   fc1.weight -> a (a=802856); fc1.bias -> b; fc2.weight -> c; fc2.bias, fc3.weight -> b;
  //   fc3.bias -> a (its group).
  const Strategy strategy =
      ParseText(Compile(Model("mlp.onnx"), {"--resources", Spec("several_ps.yml"), "--strategy",
                                            "PSLoadBalancing", "--colocate", "fc1.weight,fc3.bias"})
                    .out);
  const std::string a = "192.168.0.1:CPU:0", b = "192.168.0.2:CPU:0", c = "192.168.0.3:CPU:0";
  EXPECT_EQ(Destinations(strategy), (std::vector<std::string>{a, b, c, b, b, a}));
}

TEST_F(CliTest, ReplicaCountsBuildWorkersAndParameterServers) {
  const RunResult result = Compile(Model("mlp.onnx"), {"--workers", "2", "--gpus-per-worker", "2",
                                                       "--ps", "1", "--strategy", "PS"});
  const Strategy strategy = ParseText(result.out);
  EXPECT_EQ(std::vector<std::string>(strategy.graph_config().replicas().begin(),
                                     strategy.graph_config().replicas().end()),
            (std::vector<std::string>{"worker-0:GPU:0", "worker-0:GPU:1", "worker-1:GPU:0",
                                      "worker-1:GPU:1"}));
  for (const auto& node : strategy.node_config()) {
    EXPECT_EQ(node.pssynchronizer().reduction_destination(), "ps-0:CPU:0");
  }
  EXPECT_TRUE(Contains(result.err, "replicas: 4"));
}

TEST_F(CliTest, ExplainRanksAutosCandidatesOnTheGivenLinks) {
  const RunResult result = Compile(
      Model("mlp.onnx"), {"--workers", "2", "--ps", "1", "--explain", "--network-bandwidth-gbps",
                          "1", "--allow-lossy-compression", "-o", "s.pb"});
  EXPECT_TRUE(Contains(result.out, "candidates ranked by predicted step time")) << result.out;
  EXPECT_TRUE(Contains(result.out, "links 1 Gbit/s"));
  EXPECT_TRUE(Contains(result.out, "lossy compression allowed"));
  EXPECT_TRUE(Contains(result.out, "  1  "));
  EXPECT_TRUE(Contains(result.out, "compressor=PowerSGDCompressor"));
  EXPECT_TRUE(Contains(result.out, "Auto chose "));
  // A named builder: its one strategy, predicted by the same model.
  const RunResult named = Compile(
      Model("mlp.onnx"), {"--workers", "2", "--strategy", "PS", "--explain", "-o", "ps.pb"});
  EXPECT_TRUE(Contains(named.out, "Predicted step time (the cost model Auto uses)")) << named.out;
  EXPECT_TRUE(Contains(named.out, "  1  PS  ")) << named.out;
  ExpectUserError(
      {"compile", "--model", Model("mlp.onnx"), "--strategy", "PS", "--allow-lossy-compression"},
      {"--allow-lossy-compression is for --strategy Auto"});
  ExpectUserError({"compile", "--model", Model("mlp.onnx"), "--profile", "missing.json"},
                  {"missing.json"});
  // The links' latency: 0 is none, a negative one is refused.
  const RunResult no_latency =
      Compile(Model("mlp.onnx"),
              {"--workers", "2", "--explain", "--network-latency-us", "0", "-o", "l.pb"});
  EXPECT_TRUE(Contains(no_latency.out, "0 us per message")) << no_latency.out;
  ExpectUserError(
      {"compile", "--model", Model("mlp.onnx"), "--explain", "--network-latency-us", "-5"},
      {"--network-latency-us -5", "expected 0 or more microseconds"});
}

TEST_F(CliTest, TheOptimizerDecidesWhetherParameterServersSendBackRowsOrTables) {
  // The embedding's [1000, 64] table under PS: plain SGD leaves absent rows alone, so a worker
  // pulls the rows a step changed; momentum moves every row, so it pulls the table.
  const auto explain = [&](std::vector<std::string> optimizer) {
    std::vector<std::string> args = {"--workers", "2",         "--ps", "1",   "--strategy",
                                     "PS",        "--explain", "-o",   "e.pb"};
    args.insert(args.end(), optimizer.begin(), optimizer.end());
    return Compile(Model("embedding.onnx"), args);
  };
  const RunResult rows = explain({"--optimizer", "sgd", "--optimizer-option", "lr=0.1"});
  EXPECT_TRUE(Contains(rows.out, "send back the rows a step changed")) << rows.out;
  const RunResult tables = explain(
      {"--optimizer", "sgd", "--optimizer-option", "lr=0.1", "--optimizer-option", "momentum=0.9"});
  EXPECT_TRUE(Contains(tables.out, "send back whole tables")) << tables.out;
  EXPECT_TRUE(Contains(explain({}).out, "or is not known"));
  const RunResult lazy = explain({"--optimizer", "adam", "--optimizer-option", "lazy_sparse=true"});
  EXPECT_TRUE(Contains(lazy.out, "send back the rows a step changed")) << lazy.out;
  ExpectUserError({"compile", "--model", Model("embedding.onnx"), "--optimizer-option", "lr=1"},
                  {"--optimizer-option needs --optimizer"});
  ExpectUserError({"compile", "--model", Model("embedding.onnx"), "--optimizer", "sgd",
                   "--optimizer-option", "momentum"},
                  {"--optimizer-option expects key=value, got 'momentum'"});
  ExpectUserError({"compile", "--model", Model("embedding.onnx"), "--optimizer", "lion"}, {"lion"});
}

TEST_F(CliTest, DefaultResourcesAreOneLocalCpuReplica) {
  const RunResult result = Compile(Model("mlp.onnx"), {});
  const Strategy strategy = ParseText(result.out);
  ASSERT_EQ(strategy.graph_config().replicas_size(), 1);
  EXPECT_EQ(strategy.graph_config().replicas(0), "localhost:CPU:0");
  // Auto ranks its candidates by the cost model and says which it chose, and why.
  EXPECT_TRUE(Contains(result.err, "Auto chose "));
  EXPECT_TRUE(Contains(result.err, "per step, the lowest of "));
}

// ---- bad input: exit 2 and one clear message -------------------------------------------------

TEST_F(CliTest, BadModelsAreUserErrors) {
  ExpectUserError({"compile", "--model", "missing.onnx"}, {"missing.onnx", "does not exist"});
  ExpectUserError({"compile", "--model", Model("not_onnx.onnx")},
                  {"not_onnx.onnx", "neither an ONNX model nor a GraphItem"});
  // The ONNX checker's own message may span lines; it is still one error.
  ExpectUserError({"compile", "--model", Model("bad_checker.onnx")},
                  {"bad_checker.onnx", "ONNX checker"}, /*multi_line_ok=*/true);
  ExpectUserError({"compile", "--model", Model("no_variables.onnx")}, {"no trainable variables"});
}

// ---- the model preflight: every node needs a kernel on the backend that will run it ----------

TEST_F(CliTest, InspectRefusesAnLstmExportListingEveryUnsupportedOp) {
  ExpectUserError({"inspect", Model("lstm.onnx")},
                  {"lstm.onnx' has ops the cpu backend has no kernel for: ", "LSTM (opset 14: node",
                   "ConstantOfShape (opset 14: node"});
  const RunResult mlp = Run({"inspect", Model("mlp.onnx")});
  EXPECT_EQ(mlp.exit_code, 0) << mlp.err;
  EXPECT_TRUE(Contains(mlp.out, " nodes; every op has a kernel on cpu\n")) << mlp.out;
}

TEST_F(CliTest, InspectAndCompileCheckTheCudaKernelsForGpus) {
  const RunResult mlp = Run({"inspect", Model("mlp.onnx"), "--backend", "cuda"});
  EXPECT_EQ(mlp.exit_code, 0) << mlp.err;
  EXPECT_TRUE(Contains(mlp.out, "every op has a kernel on cuda")) << mlp.out;
  // Every op of the CPU engine has a CUDA kernel: the embedding model's Gather too. The LSTM
  // export's ops have a kernel on neither backend.
  const RunResult embedding = Run({"inspect", Model("embedding.onnx"), "--backend", "cuda"});
  EXPECT_EQ(embedding.exit_code, 0) << embedding.err;
  ExpectUserError({"inspect", Model("lstm.onnx"), "--backend", "cuda"},
                  {"has ops the cuda backend has no kernel for: ", "LSTM (opset 14: node"});
  ExpectUserError(
      {"compile", "--model", Model("lstm.onnx"), "--workers", "2", "--gpus-per-worker", "1"},
      {"cuda backend has no kernel for: ", "LSTM"});
  EXPECT_EQ(Run({"compile", "--model", Model("embedding.onnx"), "--workers", "2",
                 "--gpus-per-worker", "1"})
                .exit_code,
            0);
  EXPECT_EQ(Run({"compile", "--model", Model("lstm.onnx"), "--workers", "2", "--gpus-per-worker",
                 "1", "--skip-kernel-check"})
                .exit_code,
            0);
  const RunResult bad = Run({"inspect", Model("mlp.onnx"), "--backend", "tpu"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(Contains(bad.err, "--backend")) << bad.err;
}

TEST_F(CliTest, RunRefusesAnLstmExportBeforeStartingAnyProcess) {
  const std::string manifest = WriteMinimalManifest("lstm", Model("lstm.onnx"), 2);
  const fs::path logs = dir_ / "logs";
  ExpectUserError(
      {"run", manifest, "--log-dir", logs.string()},
      {"lstm.onnx' has ops the cpu backend has no kernel for: ", "LSTM", "ConstantOfShape"});
  EXPECT_FALSE(fs::exists(logs)) << "a process was started";
}

TEST_F(CliTest, BadResourceSpecsAreUserErrors) {
  ExpectUserError(
      {"compile", "--model", Model("mlp.onnx"), "--resources", Spec("bad/malformed.yml")},
      {"malformed.yml", "invalid YAML", "malformed.yml:4:"});
  ExpectUserError({"compile", "--model", Model("mlp.onnx"), "--resources", "missing.yml"},
                  {"missing.yml", "does not exist"});
  ExpectUserError(
      {"compile", "--model", Model("mlp.onnx"), "--resources", Spec("bad/two_chiefs.yml")},
      {"two_chiefs.yml", "chief"});
  ExpectUserError(
      {"compile", "--model", Model("mlp.onnx"), "--resources", Spec("bad/no_chief.yml")},
      {"no_chief.yml", "chief"});
  ExpectUserError({"compile", "--model", Model("mlp.onnx"), "--resources", Spec("several_ps.yml"),
                   "--workers", "2"},
                  {"--resources", "--workers"});
}

TEST_F(CliTest, BadBuilderOptionsAreUserErrors) {
  const std::vector<std::string> base = {"compile", "--model", Model("mlp.onnx"), "--strategy"};
  auto with = [&](std::vector<std::string> rest) {
    std::vector<std::string> all = base;
    all.insert(all.end(), rest.begin(), rest.end());
    return all;
  };
  ExpectUserError(with({"AllReduce", "--option", "staleness=1"}),
                  {"AllReduce", "staleness", "chunk_size"});
  ExpectUserError(with({"AllReduce", "--option", "chunk_size"}), {"key=value", "chunk_size"});
  ExpectUserError(with({"AllReduce", "--option", "compressor=Zip"}),
                  {"Zip", "NoneCompressor", "HorovodCompressor", "HorovodCompressorEF"});
  ExpectUserError(with({"PartitionedAR", "--option", "chunk_size=0"}), {"chunk_size", ">= 1"});
  ExpectUserError(with({"PS", "--option", "sync=false", "--option", "staleness=2"}),
                  {"staleness=2", "sync=true"});
  ExpectUserError(with({"AllReduce", "--colocate", "fc1.weight,fc1.bias"}),
                  {"AllReduce", "colocation"});
  ExpectUserError(with({"PSLoadBalancing", "--colocate", "fc1.weight,nope"}), {"'nope'"});
}

TEST_F(CliTest, UnknownBuilderIsRejectedByTheParserWithTheValidNames) {
  const RunResult result = Run({"compile", "--model", Model("mlp.onnx"), "--strategy", "PSLB"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_TRUE(Contains(result.err, "--strategy"));
  EXPECT_TRUE(Contains(result.err, "PSLB"));
  for (const char* name :
       {"PS", "PSLoadBalancing", "PartitionedPS", "UnevenPartitionedPS", "AllReduce",
        "PartitionedAR", "RandomAxisPartitionAR", "Parallax", "Auto"}) {
    EXPECT_TRUE(Contains(result.err, name)) << name;
  }
}

TEST_F(CliTest, UnknownFormatIsRejectedByTheParser) {
  const RunResult result = Run({"compile", "--model", Model("mlp.onnx"), "--format", "yaml"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_TRUE(Contains(result.err, "yaml"));
  EXPECT_TRUE(Contains(result.err, "binary"));
}

// ---- usage ------------------------------------------------------------------------------------

TEST_F(CliTest, RunRefusesAJobLargerThanTheMachineAndAZeroMaxProcesses) {
  const std::string manifest = WriteMinimalManifest("huge", Model("mlp.onnx"), 100000);
  const RunResult huge = Run({"run", manifest});
  EXPECT_EQ(huge.exit_code, 2) << huge.err;
  EXPECT_TRUE(Contains(huge.err,
                       "spec.resources: the job would start 100000 local processes "
                       "(100000 workers, 0 parameter servers), more than this machine "
                       "holds"))
      << huge.err;
  const RunResult zero = Run({"run", manifest, "--max-processes", "0"});
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_TRUE(Contains(zero.err, "--max-processes")) << zero.err;
}

TEST_F(CliTest, NoSubcommandIsAUsageError) {
  const RunResult result = Run({});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_TRUE(Contains(result.err, "subcommand")) << result.err;
}

TEST_F(CliTest, MissingRequiredModelIsAUsageError) {
  const RunResult result = Run({"compile"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(Contains(result.err, "--model")) << result.err;
}

TEST_F(CliTest, HelpAndVersionSucceed) {
  const RunResult help = Run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(Contains(help.out, "compile"));
  EXPECT_TRUE(Contains(help.out, "inspect"));

  const RunResult compile_help = Run({"compile", "--help"});
  EXPECT_EQ(compile_help.exit_code, 0);
  EXPECT_TRUE(Contains(compile_help.out, "--strategy"));
  EXPECT_TRUE(Contains(compile_help.out, "--format"));

  const RunResult version = Run({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(std::regex_search(version.out, std::regex(R"(^autodist \d+\.\d+\.\d+)")))
      << version.out;
}

}  // namespace
}  // namespace autodist::cli
