// `autodist run` when things go wrong: bad manifests and inputs are refused before anything
// starts; a member killed mid-run stops the whole job within the heartbeat deadline with a
// message naming it, and no process of the job is left behind; the run-time deadline and a
// member that cannot start end the run the same way.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <future>
#include <limits>
#include <optional>

#include "launcher/local_limit.h"
#include "runtime/cli/worker_collectives.h"
#include "tests/launcher/run_job_test_util.h"

namespace autodist::launcher {
namespace {

using ::testing::HasSubstr;

// Waits until `path` contains `text`.
bool WaitForText(const std::string& path, const std::string& text) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    if (ReadText(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

JobParams LongRun() {
  JobParams params;
  params.steps = 1000000;
  return params;
}

TEST(RunFaultsTest, KilledWorkerStopsTheJobNamingItAndLeavesNothingBehind) {
  TempDir dir;
  const std::string manifest = WriteManifest(dir, JobYaml(LongRun(), dir / "ckpt"));
  const cli::RunOptions options = OptionsFor(dir, manifest);
  auto run = std::async(std::launch::async, [&] { return RunManifest(options); });
  const pid_t victim = WaitForMember(manifest, "worker-1");
  ASSERT_NE(victim, 0) << "worker-1 never started";
  ASSERT_TRUE(WaitForText(dir / "logs/worker-1.log", "step 3/"));
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const RunOutcome outcome = run.get();
  // The launcher sees the exit at once; the heartbeat deadline (3 s here) bounds it anyway.
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, std::chrono::seconds(15));
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("worker-1"));
  EXPECT_THAT(outcome.err, HasSubstr("SIGKILL"));
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
}

// A worker that hangs (alive, silent) under a parameter-server and under an all-reduce strategy:
// the others block in a push or a collective, and the heartbeat deadline ends the job.
class HungWorker : public ::testing::TestWithParam<const char*> {};

TEST_P(HungWorker, FailsTheJobWithinTheHeartbeatDeadline) {
  TempDir dir;
  JobParams params = LongRun();
  // The GPU workers' all-reduce path, run on the CPU: a rank per replica, each aborted alike.
  const bool replica_ranks = std::string(GetParam()) == "AllReduceOnReplicaRanks";
  params.builder = replica_ranks ? "AllReduce" : GetParam();
  params.parameter_servers = params.builder == "PS" ? 1 : 0;
  std::optional<ScopedEnvironment> hook;
  if (replica_ranks) hook.emplace(cli::kReplicaRanksOnCpuEnv, "1");
  const std::string manifest = WriteManifest(dir, JobYaml(params, dir / "ckpt"));
  const cli::RunOptions options = OptionsFor(dir, manifest);
  auto run = std::async(std::launch::async, [&] { return RunManifest(options); });
  const pid_t victim = WaitForMember(manifest, "worker-1");
  ASSERT_NE(victim, 0) << "worker-1 never started";
  ASSERT_TRUE(WaitForText(dir / "logs/worker-1.log", "step 3/"));
  // Alive but silent: only the coordinator's heartbeat deadline (3 s here) can notice.
  const auto stopped_at = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(victim, SIGSTOP), 0);
  ASSERT_EQ(run.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const RunOutcome outcome = run.get();
  const auto took = std::chrono::steady_clock::now() - stopped_at;
  EXPECT_GE(took, std::chrono::seconds(3));
  EXPECT_LT(took, std::chrono::seconds(20));
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("worker-1 (worker rank 1"));
  EXPECT_THAT(outcome.err, HasSubstr("sent no heartbeat"));
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
  // The worker left waiting for worker-1 aborted its communicator on the way out (NCCL's
  // kernels on a GPU would wait for ever otherwise); parameter servers have none.
  const std::string survivor = ReadText(dir / "logs/worker-0.log");
  if (params.builder == "AllReduce") {
    EXPECT_THAT(survivor, HasSubstr("worker-0: aborted 1 collective communicator"));
  } else {
    EXPECT_THAT(survivor, ::testing::Not(HasSubstr("collective communicator")));
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, HungWorker,
                         ::testing::Values("PS", "AllReduce", "AllReduceOnReplicaRanks"));

// Ctrl-C at the terminal: the launcher binary stops every member and exits 128 + SIGINT.
TEST(RunFaultsTest, InterruptStopsEveryProcess) {
  TempDir dir;
  const std::string manifest = WriteManifest(dir, JobYaml(LongRun(), dir / "ckpt"));
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string binary = std::string(AUTODIST_BIN_DIR) + "/autodist";
    const std::string log_dir = dir / "logs";
    freopen("/dev/null", "w", stdout);
    execl(binary.c_str(), binary.c_str(), "run", manifest.c_str(), "--log-dir", log_dir.c_str(),
          "--threads", "1", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(WaitForText(dir / "logs/worker-1.log", "step 3/"));
  ASSERT_EQ(kill(launcher, SIGINT), 0);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
}

TEST(RunFaultsTest, DeadlineStopsTheJob) {
  TempDir dir;
  JobParams params = LongRun();
  params.run_policy = "    activeDeadlineSeconds: 2\n";
  const RunOutcome outcome =
      RunManifest(OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt"))));
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("activeDeadlineSeconds"));
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
}

// A copy of the parity images with NaN in every pixel of row `row`, written to `path`.
void WriteImagesWithNanRow(const std::string& path, int64_t row) {
  std::string bytes = ReadText(kParityDir + "mlp/image.npy");
  // NPY 1.0: magic (6), version (2), header length (2, little-endian), header, then the data:
  // float32 [320, 1, 28, 28] in C order.
  const size_t header = 10 + static_cast<uint8_t>(bytes[8]) + 256 * static_cast<uint8_t>(bytes[9]);
  constexpr int64_t kPixels = 28 * 28;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t i = 0; i < kPixels; ++i) {
    std::memcpy(&bytes[header + static_cast<size_t>((row * kPixels + i) * 4)], &nan, 4);
  }
  std::ofstream(path, std::ios::binary) << bytes;
}

// Worker 1 diverges at step 4 (NaN in its data), while the others are mid-step with it: the
// failure is named as that worker's, with its step, under both kinds of synchronization (and on
// the GPU workers' all-reduce path, run on the CPU: there the check is the part's, on its
// communication thread), never as another member's broken connection.
class DivergingWorker : public ::testing::TestWithParam<const char*> {};

TEST_P(DivergingWorker, IsNamedWithItsStepNotAPeersBrokenConnection) {
  TempDir dir;
  JobParams params;
  const bool replica_ranks = std::string(GetParam()) == "AllReduceOnReplicaRanks";
  params.builder = replica_ranks ? "AllReduce" : GetParam();
  params.parameter_servers = std::string(GetParam()) == "PS" ? 1 : 0;
  std::optional<ScopedEnvironment> hook;
  if (replica_ranks) hook.emplace(cli::kReplicaRanksOnCpuEnv, "1");
  params.steps = 10;
  std::string yaml = JobYaml(params, dir / "ckpt");
  // Unshuffled, rank r reads rows r, r + 2, ...: worker 1's step 4 (batch 8) starts at row
  // 1 + 2 * 3 * 8.
  yaml.replace(yaml.find("shuffle: true"), 13, "shuffle: false");
  const std::string images = kParityDir + "mlp/image.npy";
  WriteImagesWithNanRow(dir / "images.npy", 49);
  yaml.replace(yaml.find(images), images.size(), dir / "images.npy");
  const RunOutcome outcome = RunManifest(OptionsFor(dir, WriteManifest(dir, yaml)));
  EXPECT_EQ(outcome.exit_code, 1);
  const std::string summary = outcome.err.substr(0, outcome.err.find("\n--- "));
  EXPECT_THAT(summary, HasSubstr("job parity failed: worker-1 exited with code 1")) << summary;
  EXPECT_THAT(summary, HasSubstr("step 4: training diverged")) << summary;
  EXPECT_THAT(summary, ::testing::Not(HasSubstr("could not report the failure"))) << summary;
  // The others say why they stopped: the diverged worker, not a broken connection.
  for (const char* other : {"worker-0", "ps-0"}) {
    if (std::string(other) == "ps-0" && params.parameter_servers == 0) continue;
    const std::string log = ReadText(dir / (std::string("logs/") + other + ".log"));
    EXPECT_THAT(log, ::testing::ContainsRegex(
                         "stopped: worker-1 \\(worker rank 1, pid [0-9]+\\) failed: step 4: "
                         "training diverged"))
        << other << ":\n"
        << log;
    EXPECT_THAT(log, ::testing::Not(HasSubstr("autodist-runtime: error:"))) << other << log;
    EXPECT_THAT(log, ::testing::Not(HasSubstr("could not report the failure"))) << log;
  }
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
  if (replica_ranks) {
    EXPECT_THAT(ReadText(dir / "logs/worker-1.log"), HasSubstr("one Gloo rank per replica"));
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, DivergingWorker,
                         ::testing::Values("PS", "AllReduce", "AllReduceOnReplicaRanks"));

TEST(RunFaultsTest, MemberFailingAtStartNamesItsError) {
  TempDir dir;
  // The launcher does not open data files; each worker finds this one missing when it loads.
  std::string yaml = JobYaml(JobParams{}, dir / "ckpt");
  const std::string labels = kParityDir + "mlp/label.npy";
  yaml.replace(yaml.find(labels), labels.size(), dir / "missing-labels.npy");
  const RunOutcome outcome = RunManifest(OptionsFor(dir, WriteManifest(dir, yaml)));
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("missing-labels.npy"));
  EXPECT_THAT(outcome.err, ::testing::ContainsRegex("worker-[01] exited with code 2"));
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
}

// A job asking for GPUs never trains on the CPUs instead: each worker checks the GPUs are here
// (this machine has none, or a CPU-only build has no CUDA backend), and with them a distributed
// job still needs the NCCL backend. Whichever it is, the error names the field.
TEST(RunFaultsTest, GpusAskedForAreNeverReplacedByCpus) {
  TempDir dir;
  std::string yaml = JobYaml(JobParams{}, dir / "ckpt");
  const std::string replicas = "    replicasPerWorker: 1\n";
  yaml.replace(yaml.find(replicas), replicas.size(), replicas + "    gpusPerWorker: 1\n");
  const RunOutcome outcome = RunManifest(OptionsFor(dir, WriteManifest(dir, yaml)));
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_THAT(outcome.err, HasSubstr("resources.gpusPerWorker: "));
  EXPECT_THAT(outcome.err, ::testing::ContainsRegex("asked for, but this machine has none|built "
                                                    "without the cuda backend|NCCL backend"));
  EXPECT_THAT(outcome.err, ::testing::ContainsRegex("worker-[01] exited with code"));
  EXPECT_THAT(outcome.out, ::testing::Not(HasSubstr("step 1/")));
  EXPECT_THAT(ProcessesMentioning(dir.path().string()), ::testing::IsEmpty());
}

TEST(RunFaultsTest, PortInUseIsRefusedBeforeStarting) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const int port = ntohs(address.sin_port);

  TempDir dir;
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(JobParams{}, "ckpt")));
  options.port = port;
  const Error error = ErrorOf([&] { RunManifest(options); });
  EXPECT_THAT(error.what(), HasSubstr(std::to_string(port)));
  EXPECT_THAT(error.what(), HasSubstr("in use"));
  close(fd);
}

TEST(RunFaultsTest, MissingModelIsRefusedNamingThePath) {
  TempDir dir;
  std::string yaml = JobYaml(JobParams{}, "ckpt");
  const std::string model = kParityDir + "mlp/model.onnx";
  yaml.replace(yaml.find(model), model.size(), "/nonexistent/model.onnx");
  const Error error = ErrorOf([&] { RunManifest(OptionsFor(dir, WriteManifest(dir, yaml))); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_THAT(error.what(), HasSubstr("/nonexistent/model.onnx"));
  EXPECT_THAT(error.what(), HasSubstr("spec.model.path"));
}

TEST(RunFaultsTest, InvalidManifestIsRefusedWithItsYamlPath) {
  TempDir dir;
  std::string yaml = JobYaml(JobParams{}, "ckpt");
  yaml.replace(yaml.find("workers: 2"), 10, "workers: two");
  const Error error = ErrorOf([&] { RunManifest(OptionsFor(dir, WriteManifest(dir, yaml))); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr("spec.resources.workers"));
}

TEST(RunFaultsTest, MoreProcessesThanTheMachineHoldsAreRefusedBeforeAnyStarts) {
  TempDir dir;
  JobParams params;
  params.workers = 100000;
  const std::string manifest = WriteManifest(dir, JobYaml(params, "ckpt"));
  cli::RunOptions options = OptionsFor(dir, manifest);
  const Error error = ErrorOf([&] { RunManifest(options); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(error.what(), HasSubstr(manifest + ": spec.resources: the job would start 100001 "
                                                 "local processes (100000 workers, 1 parameter "
                                                 "server), more than this machine holds: "));
  EXPECT_THAT(error.what(), HasSubstr("give --max-processes N to allow more"));
  // Nothing started: not even the log directory of a member.
  EXPECT_FALSE(std::filesystem::exists(options.log_dir + "/worker-0.log"));
  // --max-processes replaces the machine's limit, both ways.
  options.max_processes = 2;
  params.workers = 2;
  options.manifest = WriteManifest(dir, JobYaml(params, "ckpt"));
  EXPECT_THAT(ErrorOf([&] { RunManifest(options); }).what(),
              HasSubstr("would start 3 local processes (2 workers, 1 parameter server), more "
                        "than --max-processes 2 allows"));
}

TEST(LocalProcessLimitTest, CoresAndAvailableMemoryBoundIt) {
  EXPECT_EQ(cli::ProcessLimitFor(2, std::nullopt).processes, 32);
  EXPECT_EQ(cli::ProcessLimitFor(2, int64_t{1} << 30).processes, 16);  // 1 GiB / 64 MiB
  EXPECT_EQ(cli::ProcessLimitFor(0, int64_t{1} << 20).processes, 1);   // never below one
  EXPECT_EQ(cli::ProcessLimitFor(2, int64_t{1} << 30).Describe(),
            "16 (16 per core on 2 cores; one per 64.0 MiB of 1.0 GiB available memory)");
  EXPECT_EQ(cli::ProcessLimitFor(1, std::nullopt).Describe(), "16 (16 per core on 1 core)");
  EXPECT_GE(cli::MachineProcessLimit().processes, 1);
  EXPECT_NO_THROW(cli::CheckLocalProcessCount("job.yaml", 2, 1, 0, cli::ProcessLimitFor(2, {})));
}

}  // namespace
}  // namespace autodist::launcher
