// JobToYaml: parse(emit(parse(x))) == parse(x) for every fixture and example, emitting is stable,
// and strings that look like other types stay strings.
#include "runtime/job/job_writer.h"

#include <gtest/gtest.h>

#include "runtime/job/job_parser.h"
#include "tests/job/job_test_support.h"

namespace autodist::job {
namespace {

using testing::kJobFixtures;
using testing::ReadText;

void ExpectRoundTrip(const JobSpec& job) {
  const std::string text = JobToYaml(job);
  const JobSpec again = ParseJob(text, "emitted.yaml", job.manifest_dir);
  EXPECT_EQ(again, job) << text;
  EXPECT_EQ(JobToYaml(again), text);
}

TEST(JobWriterTest, RoundTripsEveryFixtureAndExample) {
  const std::string examples = std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist";
  for (const std::string& path :
       {kJobFixtures + "/full.yaml", kJobFixtures + "/minimal.yaml", kJobFixtures + "/cluster.json",
        examples + "/job-ps.yaml", examples + "/job-local.yaml"}) {
    SCOPED_TRACE(path);
    ExpectRoundTrip(LoadJobFile(path));
  }
}

TEST(JobWriterTest, RoundTripKeepsRelativePathsWithoutADirectory) {
  const JobSpec job = ParseJob(ReadText(kJobFixtures + "/full.yaml"), "full.yaml", "");
  EXPECT_EQ(job.model.path, "models/mlp.onnx");
  ExpectRoundTrip(job);
}

TEST(JobWriterTest, RoundTripsTheTensorBoardPath) {
  JobSpec job = LoadJobFile(kJobFixtures + "/full.yaml");
  job.training.tensorboard_path = "/runs/full";
  ExpectRoundTrip(job);
  EXPECT_NE(JobToYaml(job).find("tensorboard:\n      path: /runs/full"), std::string::npos)
      << JobToYaml(job);
}

TEST(JobWriterTest, RoundTripsTheTimelinePath) {
  JobSpec job = LoadJobFile(kJobFixtures + "/full.yaml");
  job.training.timeline_path = "/traces/full";
  ExpectRoundTrip(job);
  EXPECT_NE(JobToYaml(job).find("timeline:\n      path: /traces/full"), std::string::npos)
      << JobToYaml(job);
}

TEST(JobWriterTest, EqualityNoticesEveryPart) {
  // The round trip compares with operator==, so it must see a change anywhere.
  const JobSpec job = LoadJobFile(kJobFixtures + "/full.yaml");
  JobSpec changed = job;
  changed.training.optimizer.beta2 = 0.5;
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.training.lr_schedule.total_steps = 1;
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.training.optimizer_options["eps"] = "1e-6";
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.strategy.state_reduction["x"] = StateReduction::kSum;
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.pod_template += " ";
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.run_policy.backoff_limit.reset();
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.training.tensorboard_path = "runs";
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.training.timeline_path = "traces";
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.run_policy.restart_policy = RestartPolicy::kExitCode;
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.run_policy.scheduling_policy = SchedulingPolicy{"volcano", "", "", std::nullopt};
  EXPECT_FALSE(changed == job);
  changed = job;
  changed.training.precision = ops::Precision::kTf32;
  EXPECT_FALSE(changed == job);
}

// tf32 on GPUs parses, is written back, and fp32 (the default) is left out.
TEST(JobWriterTest, RoundTripsPrecision) {
  std::string text = ReadText(kJobFixtures + "/minimal.yaml");
  EXPECT_EQ(JobToYaml(ParseJob(text, "minimal.yaml", "/m")).find("precision"), std::string::npos);
  const std::string training = "  training:\n";
  text.replace(text.find(training), training.size(), training + "    precision: tf32\n");
  text += "  resources:\n    gpusPerWorker: 1\n";
  const JobSpec job = ParseJob(text, "minimal.yaml", "/m");
  EXPECT_EQ(job.training.precision, ops::Precision::kTf32);
  EXPECT_NE(JobToYaml(job).find("    precision: tf32\n"), std::string::npos);
  ExpectRoundTrip(job);
}

TEST(JobWriterTest, RoundTripsRestartAndSchedulingPolicies) {
  JobSpec job = ParseJob(ReadText(kJobFixtures + "/minimal.yaml"), "minimal.yaml", "/m");
  for (const RestartPolicy policy :
       {RestartPolicy::kNever, RestartPolicy::kOnFailure, RestartPolicy::kExitCode}) {
    job.run_policy.restart_policy = policy;
    ExpectRoundTrip(job);
  }
  job.run_policy.scheduling_policy = SchedulingPolicy{"volcano", "research", "high", 30};
  ExpectRoundTrip(job);
  job.run_policy.scheduling_policy = SchedulingPolicy{"scheduler-plugins", "", "", std::nullopt};
  ExpectRoundTrip(job);
  const std::string text = JobToYaml(job);
  EXPECT_NE(text.find("    restartPolicy: ExitCode\n"), std::string::npos) << text;
  EXPECT_NE(text.find("      schedulerName: scheduler-plugins\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("queue"), std::string::npos) << text;
}

TEST(JobWriterTest, EmitsDefaultsExplicitly) {
  const JobSpec job = ParseJob(ReadText(kJobFixtures + "/minimal.yaml"), "minimal.yaml", "/m");
  const std::string text = JobToYaml(job);
  for (const char* line :
       {"apiVersion: autodist.io/v1alpha1", "kind: AutoDistJob", "  name: minimal",
        "    path: /m/model.onnx", "    logits: logits", "    format: fashion-mnist",
        "    dir: /usr/share/datasets/fashion-mnist", "    evalBatchSize: 1000",
        "    shuffle: true", "    builder: Auto", "    workers: 1", "    parameterServers: 0",
        "    cleanPodPolicy: None", "    suspend: false", "    logIntervalSteps: 100",
        "    restartPolicy: OnFailure"}) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line << "\n" << text;
  }
  // Unset optional values are left out rather than written as null.
  EXPECT_EQ(text.find("backoffLimit"), std::string::npos) << text;
  EXPECT_EQ(text.find("checkpoint"), std::string::npos) << text;
  EXPECT_EQ(text.find("template"), std::string::npos) << text;
  EXPECT_EQ(text.find("schedulingPolicy"), std::string::npos) << text;
  EXPECT_EQ(text.find("~"), std::string::npos) << text;
}

TEST(JobWriterTest, StringsWithEdgeWhitespaceOrControlCharactersKeepEveryByte) {
  // The fuzzer's find: a path ending in carriage returns was written plain and read back with
  // one fewer.
  JobSpec job = ParseJob(R"(apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata: {name: spaces}
spec:
  model: {path: "  lead.onnx"}
  data: {format: fashion-mnist, batchSizePerReplica: 1}
  training:
    steps: 1
    optimizer: {name: sgd, lr: 0.1}
    checkpoint: {path: "ckpt/   \r\r\r"}
    exportPath: "out\tmodel.onnx "
)",
                         "spaces.yaml", "");
  EXPECT_EQ(job.training.checkpoint->path, "ckpt/   \r\r\r");
  ExpectRoundTrip(job);
}

TEST(JobWriterTest, StringsThatLookLikeOtherTypesStayStrings) {
  const std::string text = R"(apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: quoting
  labels: {enabled: "true", version: "1.10", empty: ""}
  annotations: {count: "007", none: "null"}
spec:
  model: {path: "123", loss: "1e3"}
  data:
    format: files
    train: {"42": "yes"}
    batchSizePerReplica: 1
  training: {steps: 1, optimizer: {name: sgd, lr: 0.1}}
  strategy:
    builder: PS
    stateReduction: {"0": Sum}
  resources: {cpu: "2", memory: 1e9}
  template:
    spec:
      containers: [{name: a, args: ["--port", "8080", "on"], ports: [{containerPort: 8080}]}]
)";
  const JobSpec job = ParseJob(text, "quoting.yaml", "");
  EXPECT_EQ(job.metadata.labels.at("version"), "1.10");
  EXPECT_EQ(job.model.loss, "1e3");
  const std::string emitted = JobToYaml(job);
  for (const char* quoted :
       {"enabled: \"true\"", "version: \"1.10\"", "empty: \"\"", "count: \"007\"", "none: \"null\"",
        "path: \"123\"", "loss: \"1e3\"", "\"42\": \"yes\"", "\"0\": Sum", "cpu: \"2\"",
        "memory: \"1e9\"", "- \"8080\"", "- \"on\""}) {
    EXPECT_NE(emitted.find(quoted), std::string::npos) << quoted << "\n" << emitted;
  }
  // A number in the pod template stays a number.
  EXPECT_NE(emitted.find("containerPort: 8080"), std::string::npos) << emitted;
  ExpectRoundTrip(job);
}

}  // namespace
}  // namespace autodist::job
