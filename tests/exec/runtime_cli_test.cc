// `autodist-runtime` end to end: a short run succeeds and prints its summary; bad input exits 2
// with one message naming what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/observe/event_file.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Result RunRuntime(const std::string& arguments) {
  // ctest runs each test as its own process, concurrently: the files must not be shared.
  const std::string prefix = ::testing::TempDir() + "/runtime_cli." + std::to_string(getpid());
  const std::string out = prefix + ".out";
  const std::string err = prefix + ".err";
  const std::string command = std::string(AUTODIST_BIN_DIR) + "/autodist-runtime " + arguments +
                              " > " + out + " 2> " + err + " < /dev/null";
  const int status = std::system(command.c_str());
  Result result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = Slurp(out);
  result.err = Slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return result;
}

const std::string kParity = std::string(AUTODIST_FIXTURES_DIR) + "/parity/mlp/";

TEST(RuntimeCliTest, ShortRunSucceedsAndSummarizes) {
  const Result result =
      RunRuntime("--model " + kParity + "model.onnx --train image=" + kParity +
                 "image.npy --train label=" + kParity + "label.npy --eval image=" + kParity +
                 "image.npy --eval label=" + kParity +
                 "label.npy --steps 4 --batch-size 16 --log-every 2 --optimizer sgd --lr 0.01 "
                 "--opt momentum=0.9");
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("step 2/4"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("trained 4 steps"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("accuracy"), std::string::npos) << result.out;
}

TEST(RuntimeCliTest, BadInputExitsTwoWithAClearMessage) {
  Result result = RunRuntime("--model /nonexistent/model.onnx --steps 1");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("/nonexistent/model.onnx"), std::string::npos) << result.err;

  result = RunRuntime("--model " + std::string(AUTODIST_FIXTURES_DIR) +
                      "/models/not_onnx.onnx --steps 1 --train image=x");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("not an ONNX model"), std::string::npos) << result.err;

  result = RunRuntime("--model " + kParity + "model.onnx --steps 1 --train image=" + kParity +
                      "image.npy --train label=" + kParity + "label.npy --optimizer lion");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("lion"), std::string::npos) << result.err;

  result = RunRuntime("--model " + kParity + "model.onnx --steps 1 --train image");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("input=file"), std::string::npos) << result.err;
}

// The tensor pool's cap is read where the process starts: a bad value stops it before any work.
TEST(RuntimeCliTest, BadTensorPoolSizeExitsTwoNamingTheVariable) {
  const Result result =
      RunRuntime("--model " + kParity + "model.onnx --steps 1 --train image=" + kParity +
                 "image.npy --train label=" + kParity + "label.npy");  // a run that would succeed
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string command = "AUTODIST_TENSOR_POOL_MB=64MB " + std::string(AUTODIST_BIN_DIR) +
                              "/autodist-runtime --model " + kParity +
                              "model.onnx --steps 1 > /dev/null 2> " + ::testing::TempDir() +
                              "/pool." + std::to_string(getpid()) + ".err";
  const int status = std::system(command.c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2);
  const std::string err_path = ::testing::TempDir() + "/pool." + std::to_string(getpid()) + ".err";
  const std::string err = Slurp(err_path);
  std::remove(err_path.c_str());
  EXPECT_NE(err.find("AUTODIST_TENSOR_POOL_MB"), std::string::npos) << err;
  EXPECT_NE(err.find("'64MB'"), std::string::npos) << err;
}

TEST(RuntimeCliTest, DivergenceExitsNonZeroNamingTheStep) {
  const Result result = RunRuntime("--model " + kParity + "model.onnx --train image=" + kParity +
                                   "image.npy --train label=" + kParity +
                                   "label.npy --steps 30 --optimizer sgd --lr 1e30");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("diverged"), std::string::npos) << result.err;
}

// --device cuda on a machine without a GPU (or a build without the CUDA backend) is an error
// naming the flag, never a CPU run; with a GPU it trains there and says so.
TEST(RuntimeCliTest, DeviceCudaNeverFallsBackToTheCpu) {
  const std::string run = "--model " + kParity + "model.onnx --train image=" + kParity +
                          "image.npy label=" + kParity + "label.npy --steps 2 --batch-size 8 ";
  const Result result = RunRuntime(run + "--device cuda");
  if (result.exit_code == 0) {
    EXPECT_THAT(result.out, HasSubstr("training on cuda:0 ("));
    return;
  }
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("--device cuda: "));
  EXPECT_THAT(result.err, ::testing::ContainsRegex("GPU asked for, but this machine has none|"
                                                   "built without the cuda backend"));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("trained ")));
}

TEST(RuntimeCliTest, AnUnknownDeviceExitsTwoListingTheKnownOnes) {
  const Result result = RunRuntime("--model " + kParity + "model.onnx --steps 1 --device tpu");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("--device: unknown device \"tpu\"; expected cpu, cuda or "
                                    "cuda:N"));
}

TEST(RuntimeCliTest, Tf32OrBf16OnTheCpuExitsTwoNamingTheFlags) {
  for (const std::string precision : {"tf32", "bf16"}) {
    const Result result =
        RunRuntime("--model " + kParity + "model.onnx --steps 1 --precision " + precision);
    EXPECT_EQ(result.exit_code, 2) << precision;
    EXPECT_THAT(result.err, HasSubstr("--precision " + precision +
                                      " needs a GPU (--device cuda); the CPU computes fp32"));
  }
}

TEST(RuntimeCliTest, DeviceIsForOneProcessNotAJobMember) {
  const Result result =
      RunRuntime("--job job.yaml --node worker-0 --coordinator x:1 --device cuda");
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_THAT(result.err, HasSubstr("--job excludes --device"));
}

TEST(RuntimeCliTest, TensorBoardFlagWritesAnEventFileOrNamesTheDirectory) {
  const std::string run = "--model " + kParity + "model.onnx --train image=" + kParity +
                          "image.npy --train label=" + kParity +
                          "label.npy --steps 2 --batch-size 16 --log-every 1 ";
  const std::string dir = ::testing::TempDir() + "/runtime_cli_tb." + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  const Result result = RunRuntime(run + "--tensorboard " + dir);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::string> files = autodist::observe::EventFilesIn(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(autodist::observe::ReadEventFile(files[0]).scalars.size(), 2u * 7u);  // 7 tags a step
  std::filesystem::remove_all(dir);

  // A directory that cannot be made: exit 2 before training, naming it.
  std::ofstream(dir) << "a file in the way";
  const Result blocked = RunRuntime(run + "--tensorboard " + dir + "/run");
  EXPECT_EQ(blocked.exit_code, 2);
  EXPECT_THAT(blocked.err, HasSubstr("TensorBoard directory " + dir + "/run"));
  EXPECT_THAT(blocked.out, Not(HasSubstr("step 1/2")));
  std::filesystem::remove(dir);
}

TEST(RuntimeCliTest, TimelineFlagRecordsTheStepsOfOneProcess) {
  const std::string run = "--model " + kParity + "model.onnx --train image=" + kParity +
                          "image.npy --train label=" + kParity +
                          "label.npy --steps 3 --batch-size 16 --log-every 3 ";
  const std::string path =
      ::testing::TempDir() + "/runtime_cli_timeline." + std::to_string(getpid()) + ".json";
  const Result result = RunRuntime(run + "--timeline " + path);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json events = nlohmann::json::parse(Slurp(path));
  std::map<std::string, int> spans;
  for (const auto& event : events) {
    if (event.value("ph", "") == "X") ++spans[event["name"].get<std::string>()];
  }
  for (const char* name : {"data wait", "forward", "backward", "synchronize", "optimizer"}) {
    EXPECT_EQ(spans[name], 3) << name;
  }
  std::remove(path.c_str());

  const Result blocked = RunRuntime(run + "--timeline /nonexistent/dir/t.json");
  EXPECT_EQ(blocked.exit_code, 2);
  EXPECT_THAT(blocked.err, HasSubstr("timeline /nonexistent/dir/t.json: cannot create it"));
}

TEST(RuntimeCliTest, HelpExitsZero) { EXPECT_EQ(RunRuntime("--help").exit_code, 0); }

}  // namespace
