// Parsing whole manifests: every field of tests/fixtures/jobs/full.yaml, the defaults of
// minimal.yaml, path resolution, JSON as the API server returns it, the examples, and the errors
// of files that are not manifests at all.
#include "runtime/job/job_parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/job/job_test_support.h"

namespace autodist::job {
namespace {

using testing::ErrorOf;
using testing::kJobFixtures;
using testing::ReadText;

TEST(JobParserTest, FullManifestParsesEveryField) {
  const JobSpec job = ParseJob(ReadText(kJobFixtures + "/full.yaml"), "full.yaml", "/jobs");
  EXPECT_EQ(job.manifest_dir, "/jobs");

  EXPECT_EQ(job.metadata.name, "fmnist-full");
  EXPECT_EQ(job.metadata.namespace_name, "training");
  EXPECT_EQ(job.metadata.labels, (std::map<std::string, std::string>{
                                     {"team", "vision"}, {"app.kubernetes.io/name", "fmnist"}}));
  EXPECT_EQ(job.metadata.annotations,
            (std::map<std::string, std::string>{{"note", "every field set"}}));
  EXPECT_EQ(job.metadata.uid, "");
  EXPECT_FALSE(job.metadata.generation.has_value());

  EXPECT_EQ(job.model.path, "/jobs/models/mlp.onnx");
  EXPECT_FALSE(job.model.config_map.has_value());
  EXPECT_EQ(job.model.loss, "loss");
  EXPECT_EQ(job.model.logits, "logits");
  EXPECT_EQ(job.model.labels, "label");

  EXPECT_EQ(job.data.format, DataFormat::kFiles);
  EXPECT_EQ(job.data.dir, "");
  EXPECT_EQ(job.data.train, (StringPairs{{"image", "/jobs/data/train-images.npy"},
                                         {"label", "/jobs/data/train-labels.idx.gz"}}));
  EXPECT_EQ(job.data.eval, (StringPairs{{"image", "/data/eval-images.npy"},
                                        {"label", "/data/eval-labels.idx.gz"}}));
  EXPECT_EQ(job.data.batch_size_per_replica, 32);
  EXPECT_EQ(job.data.eval_batch_size, 500);
  EXPECT_FALSE(job.data.shuffle);
  EXPECT_EQ(job.data.seed, 7U);

  const TrainingSpec& training = job.training;
  EXPECT_EQ(training.steps, 2000);
  EXPECT_EQ(training.epochs, 0);
  EXPECT_EQ(training.optimizer.name, "adamw");
  EXPECT_DOUBLE_EQ(training.optimizer.lr, 0.002);
  EXPECT_DOUBLE_EQ(training.optimizer.beta1, 0.8);
  EXPECT_DOUBLE_EQ(training.optimizer.beta2, 0.99);
  EXPECT_DOUBLE_EQ(training.optimizer.weight_decay, 0.05);
  EXPECT_DOUBLE_EQ(training.optimizer.eps, 1e-8);  // torch's default, not in the manifest
  EXPECT_EQ(training.optimizer_options,
            (std::map<std::string, std::string>{
                {"lr", "0.002"}, {"betas", "0.8,0.99"}, {"weightDecay", "0.05"}}));
  EXPECT_EQ(training.lr_schedule.kind, "cosine");
  EXPECT_EQ(training.lr_schedule.warmup_steps, 100);
  EXPECT_DOUBLE_EQ(training.lr_schedule.min_lr, 0.0001);
  // No totalSteps: a cosine schedule spans the training's 2000 steps.
  EXPECT_EQ(training.lr_schedule.total_steps, 2000);
  EXPECT_EQ(training.lr_schedule_options,
            (std::map<std::string, std::string>{
                {"kind", "cosine"}, {"warmupSteps", "100"}, {"minLr", "0.0001"}}));
  ASSERT_TRUE(training.checkpoint.has_value());
  EXPECT_EQ(training.checkpoint->path, "/jobs/ckpt/");
  EXPECT_EQ(training.checkpoint->interval_steps, 500);
  EXPECT_FALSE(training.checkpoint->resume);
  EXPECT_EQ(training.checkpoint->keep, 5);
  EXPECT_EQ(training.eval_interval_steps, 250);
  EXPECT_EQ(training.log_interval_steps, 50);
  EXPECT_EQ(training.export_path, "/jobs/out/trained.onnx");
  EXPECT_TRUE(training.export_external_data);

  EXPECT_EQ(job.strategy.builder, "PartitionedPS");
  EXPECT_EQ(job.strategy.options,
            (strategy::BuilderOptions{
                {"sync", "true"}, {"staleness", "2"}, {"localProxyVariable", "true"}}));
  EXPECT_EQ(job.strategy.colocation,
            (strategy::ColocationGroups{{"fc1.weight", "fc1.bias"}, {"fc2.weight"}}));
  EXPECT_EQ(job.strategy.state_reduction,
            (std::map<std::string, StateReduction>{{"bn1.running_var", StateReduction::kSum},
                                                   {"bn1.running_mean", StateReduction::kMean}}));

  EXPECT_EQ(job.resources.workers, 3);
  EXPECT_EQ(job.resources.gpus_per_worker, 0);
  EXPECT_EQ(job.resources.replicas_per_worker, 2);
  EXPECT_EQ(job.resources.parameter_servers, 2);
  EXPECT_EQ(job.resources.cpu, "1500m");
  EXPECT_EQ(job.resources.memory, "4Gi");

  EXPECT_EQ(job.run_policy.backoff_limit, 4);
  EXPECT_EQ(job.run_policy.active_deadline_seconds, 7200);
  EXPECT_EQ(job.run_policy.ttl_seconds_after_finished, 300);
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_TRUE(job.run_policy.suspend);

  // The pod template is kept for the operator, with its quoted strings still strings.
  EXPECT_NE(job.pod_template.find("pool: cpu"), std::string::npos) << job.pod_template;
  EXPECT_NE(job.pod_template.find("value: \"8080\""), std::string::npos) << job.pod_template;
  EXPECT_NE(job.pod_template.find("sidecar.istio.io/inject: \"false\""), std::string::npos)
      << job.pod_template;
  EXPECT_NE(job.pod_template.find("name: autodist"), std::string::npos) << job.pod_template;
}

TEST(JobParserTest, MinimalManifestTakesTheDefaults) {
  const JobSpec job = ParseJob(ReadText(kJobFixtures + "/minimal.yaml"), "minimal.yaml", "/m");
  EXPECT_EQ(job.metadata.name, "minimal");
  EXPECT_EQ(job.metadata.namespace_name, "");
  EXPECT_TRUE(job.metadata.labels.empty());

  EXPECT_EQ(job.model.path, "/m/model.onnx");
  EXPECT_EQ(job.model.loss, "");
  EXPECT_EQ(job.model.logits, "logits");
  EXPECT_EQ(job.model.labels, "label");

  EXPECT_EQ(job.data.format, DataFormat::kFashionMnist);
  EXPECT_EQ(job.data.dir, "/usr/share/datasets/fashion-mnist");
  EXPECT_TRUE(job.data.train.empty());
  EXPECT_EQ(job.data.batch_size_per_replica, 16);
  EXPECT_EQ(job.data.eval_batch_size, 1000);
  EXPECT_TRUE(job.data.shuffle);
  EXPECT_EQ(job.data.seed, 0U);

  EXPECT_EQ(job.training.epochs, 1);
  EXPECT_EQ(job.training.steps, 0);
  EXPECT_EQ(job.training.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(job.training.optimizer.lr, 0.1);
  EXPECT_DOUBLE_EQ(job.training.optimizer.momentum, 0.0);
  EXPECT_EQ(job.training.lr_schedule.kind, "constant");
  EXPECT_TRUE(job.training.lr_schedule_options.empty());
  EXPECT_FALSE(job.training.checkpoint.has_value());
  EXPECT_EQ(job.training.eval_interval_steps, 0);
  EXPECT_EQ(job.training.log_interval_steps, 100);
  EXPECT_EQ(job.training.export_path, "");

  EXPECT_EQ(job.strategy.builder, "Auto");
  EXPECT_TRUE(job.strategy.options.empty());
  EXPECT_TRUE(job.strategy.colocation.empty());
  EXPECT_TRUE(job.strategy.state_reduction.empty());

  EXPECT_EQ(job.resources, ResourcesSpec{});
  EXPECT_EQ(job.resources.workers, 1);
  EXPECT_EQ(job.resources.gpus_per_worker, 0);
  EXPECT_EQ(job.resources.replicas_per_worker, 1);
  EXPECT_EQ(job.resources.parameter_servers, 0);
  EXPECT_EQ(job.resources.cpu, "");

  // Kubeflow's RunPolicy defaults: PyTorchJob's restart policy OnFailure, no limits,
  // cleanPodPolicy None, not suspended, no gang scheduling.
  EXPECT_EQ(job.run_policy.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_FALSE(job.run_policy.scheduling_policy.has_value());
  EXPECT_FALSE(job.run_policy.backoff_limit.has_value());
  EXPECT_FALSE(job.run_policy.active_deadline_seconds.has_value());
  EXPECT_FALSE(job.run_policy.ttl_seconds_after_finished.has_value());
  EXPECT_EQ(job.run_policy.clean_pod_policy, CleanPodPolicy::kNone);
  EXPECT_FALSE(job.run_policy.suspend);
  EXPECT_EQ(job.pod_template, "");
}

TEST(JobParserTest, RestartAndSchedulingPolicies) {
  const std::string base = ReadText(kJobFixtures + "/minimal.yaml");
  for (const auto& [text, expected] : {std::pair{"Never", RestartPolicy::kNever},
                                       std::pair{"OnFailure", RestartPolicy::kOnFailure},
                                       std::pair{"ExitCode", RestartPolicy::kExitCode}}) {
    const JobSpec job =
        ParseJob(base + "  runPolicy:\n    restartPolicy: " + text + "\n", "job.yaml", "");
    EXPECT_EQ(job.run_policy.restart_policy, expected) << text;
    EXPECT_STREQ(RestartPolicyName(expected), text);
  }

  const JobSpec gang = ParseJob(base +
                                    "  runPolicy:\n    schedulingPolicy:\n"
                                    "      schedulerName: volcano\n      queue: research\n"
                                    "      priorityClass: high-priority\n"
                                    "      scheduleTimeoutSeconds: 600\n",
                                "job.yaml", "");
  ASSERT_TRUE(gang.run_policy.scheduling_policy.has_value());
  EXPECT_EQ(*gang.run_policy.scheduling_policy,
            (SchedulingPolicy{"volcano", "research", "high-priority", 600}));

  const JobSpec scheduler_only =
      ParseJob(base + "  runPolicy:\n    schedulingPolicy: {schedulerName: scheduler-plugins}\n",
               "job.yaml", "");
  EXPECT_EQ(*scheduler_only.run_policy.scheduling_policy,
            (SchedulingPolicy{"scheduler-plugins", "", "", std::nullopt}));
}

TEST(JobParserTest, CheckpointDefaultsToResumingAtTheEnd) {
  std::string text = ReadText(kJobFixtures + "/minimal.yaml");
  text += "    checkpoint:\n      path: /ckpt\n";
  const JobSpec job = ParseJob(text, "job.yaml", "");
  ASSERT_TRUE(job.training.checkpoint.has_value());
  EXPECT_EQ(job.training.checkpoint->path, "/ckpt");
  EXPECT_EQ(job.training.checkpoint->interval_steps, 0);
  EXPECT_TRUE(job.training.checkpoint->resume);
}

TEST(JobParserTest, RelativePathsResolveAgainstTheManifestDirectory) {
  const std::string text = R"(apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata: {name: paths}
spec:
  model: {path: ../models/./m.onnx}
  data: {format: fashion-mnist, dir: data, batchSizePerReplica: 1}
  training:
    steps: 5
    optimizer: {name: sgd, lr: 0.1}
    checkpoint: {path: /abs/ckpt}
    exportPath: out.onnx
    tensorboard: {path: runs/}
    timeline: {path: traces}
)";
  const JobSpec job = ParseJob(text, "job.yaml", "/home/u/jobs/");
  EXPECT_EQ(job.manifest_dir, "/home/u/jobs");
  EXPECT_EQ(job.model.path, "/home/u/models/m.onnx");
  EXPECT_EQ(job.data.dir, "/home/u/jobs/data");
  EXPECT_EQ(job.training.checkpoint->path, "/abs/ckpt");
  EXPECT_EQ(job.training.export_path, "/home/u/jobs/out.onnx");
  EXPECT_EQ(job.training.tensorboard_path, "/home/u/jobs/runs/");
  EXPECT_EQ(job.training.timeline_path, "/home/u/jobs/traces");

  // Without a directory (the operator: paths are inside the pod) they stay as written.
  const JobSpec kept = ParseJob(text, "job.yaml", "");
  EXPECT_EQ(kept.manifest_dir, "");
  EXPECT_EQ(kept.model.path, "../models/./m.onnx");
  EXPECT_EQ(kept.data.dir, "data");
  EXPECT_EQ(kept.training.export_path, "out.onnx");
  EXPECT_EQ(kept.training.tensorboard_path, "runs/");
  EXPECT_EQ(kept.training.timeline_path, "traces");

  // A relative directory is made absolute against the working directory.
  const JobSpec relative = ParseJob(text, "job.yaml", "sub");
  EXPECT_EQ(relative.manifest_dir, (std::filesystem::current_path() / "sub").string());
  EXPECT_EQ(relative.training.export_path,
            (std::filesystem::current_path() / "sub" / "out.onnx").string());
}

TEST(JobParserTest, LoadJobFileResolvesAgainstTheFilesDirectory) {
  const JobSpec job = LoadJobFile(kJobFixtures + "/full.yaml");
  EXPECT_EQ(job.manifest_dir, std::filesystem::path(kJobFixtures).lexically_normal().string());
  EXPECT_EQ(job.model.path, job.manifest_dir + "/models/mlp.onnx");
  EXPECT_EQ(job.training.checkpoint->path, job.manifest_dir + "/ckpt/");
}

TEST(JobParserTest, ParsesJsonAsTheApiServerReturnsIt) {
  const JobSpec job = LoadJobFile(kJobFixtures + "/cluster.json");
  EXPECT_EQ(job.metadata.name, "fmnist-cluster");
  EXPECT_EQ(job.metadata.namespace_name, "ml");
  EXPECT_EQ(job.metadata.uid, "3f2b8a4e-1c7d-4e0f-9a51-6d2c0b7e8f14");
  EXPECT_EQ(job.metadata.resource_version, "48213");
  EXPECT_EQ(job.metadata.generation, 3);
  ASSERT_TRUE(job.model.config_map.has_value());
  EXPECT_EQ(job.model.config_map->name, "fmnist-model");
  EXPECT_EQ(job.model.config_map->key, "model.onnx");  // the default key
  EXPECT_EQ(job.model.path, "");
  EXPECT_EQ(job.data.dir, "/datasets/fmnist");
  EXPECT_EQ(job.data.batch_size_per_replica, 64);
  EXPECT_EQ(job.training.epochs, 3);
  EXPECT_DOUBLE_EQ(job.training.optimizer.momentum, 0.9);
  EXPECT_EQ(job.strategy.builder, "AllReduce");
  EXPECT_EQ(job.strategy.options, (strategy::BuilderOptions{{"chunkSize", "64"},
                                                            {"compressor", "HorovodCompressor"},
                                                            {"allReduceSpec", "RING"}}));
  EXPECT_EQ(job.resources.workers, 2);
  EXPECT_EQ(job.resources.gpus_per_worker, 4);
  EXPECT_EQ(job.resources.cpu, "4");
  EXPECT_EQ(job.resources.memory, "16Gi");
}

TEST(JobParserTest, ParsedJsonGivesWhatItsTextGives) {
  const std::string text = ReadText(kJobFixtures + "/cluster.json");
  nlohmann::json object = nlohmann::json::parse(text);
  object["status"] = {{"conditions", nlohmann::json::array({{{"type", "Created"}}})}};
  EXPECT_EQ(ParseJobJson(object, "cluster.json", "/jobs"), ParseJob(text, "cluster.json", "/jobs"));

  // Errors name the same field and value, without the line number only text has.
  struct Case {
    const char* pointer;
    nlohmann::json value;
  };
  for (const Case& c :
       {Case{"/spec/resources/workers", "two"}, Case{"/spec/resources/workers", 2.5},
        Case{"/spec/training/epochs", nullptr}, Case{"/spec/strategy/builder", true},
        Case{"/spec/data", nlohmann::json::array({1})}, Case{"/spec/training/typo", 1}}) {
    nlohmann::json bad = nlohmann::json::parse(text);
    bad[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string from_json = ErrorOf([&] { ParseJobJson(bad, "job", ""); });
    const std::string from_text = ErrorOf([&] { ParseJob(bad.dump(), "job", ""); });
    ASSERT_EQ(from_json.rfind("job: ", 0), 0u) << from_json;
    ASSERT_EQ(from_text.rfind("job:1: ", 0), 0u) << from_text;
    EXPECT_EQ(from_json.substr(5), from_text.substr(7)) << c.pointer;
  }
}

TEST(JobParserTest, ExamplesParse) {
  const std::string examples = std::string(AUTODIST_SOURCE_DIR) + "/examples/fashion-mnist";
  const JobSpec ps = LoadJobFile(examples + "/job-ps.yaml");
  EXPECT_EQ(ps.metadata.name, "fmnist-ps");
  EXPECT_EQ(ps.model.path, ps.manifest_dir + "/fmnist_mlp.onnx");
  EXPECT_TRUE(std::filesystem::exists(ps.model.path)) << ps.model.path;
  EXPECT_EQ(ps.data.format, DataFormat::kFashionMnist);
  EXPECT_EQ(ps.data.batch_size_per_replica, 32);
  EXPECT_EQ(ps.training.epochs, 2);
  EXPECT_EQ(ps.training.optimizer.name, "adam");
  EXPECT_DOUBLE_EQ(ps.training.optimizer.lr, 1e-3);
  ASSERT_TRUE(ps.training.checkpoint.has_value());
  EXPECT_EQ(ps.training.checkpoint->path, ps.manifest_dir + "/fmnist-ps-ckpt/");
  EXPECT_EQ(ps.training.export_path, ps.manifest_dir + "/fmnist_mlp.ps-trained.onnx");
  EXPECT_EQ(ps.strategy.builder, "PSLoadBalancing");
  EXPECT_EQ(ps.strategy.options.at("sync"), "true");
  EXPECT_EQ(ps.resources.workers, 2);
  EXPECT_EQ(ps.resources.parameter_servers, 1);

  const JobSpec local = LoadJobFile(examples + "/job-local.yaml");
  EXPECT_EQ(local.metadata.name, "fmnist-local");
  EXPECT_TRUE(std::filesystem::exists(local.model.path)) << local.model.path;
  EXPECT_EQ(local.strategy.builder, "PS");
  EXPECT_EQ(local.resources.workers, 1);
  EXPECT_EQ(local.resources.parameter_servers, 0);
}

TEST(JobParserTest, SyntaxErrorNamesFileAndLine) {
  const std::string path = kJobFixtures + "/bad/syntax-error.yaml";
  const std::string message = ErrorOf([&] { LoadJobFile(path); });
  // The flow sequence opened on line 7 is not closed before the mapping goes on at line 8.
  EXPECT_EQ(message.rfind(path + ":8:", 0), 0U) << message;
  EXPECT_NE(message.find("invalid YAML"), std::string::npos) << message;
}

TEST(JobParserTest, UnknownFieldInAFileNamesFileLineAndPath) {
  const std::string path = kJobFixtures + "/bad/unknown-field.yaml";
  EXPECT_EQ(ErrorOf([&] { LoadJobFile(path); }),
            path +
                ":13: spec.training.optimizr: unknown field (expected one of: epochs, steps, "
                "optimizer, lrSchedule, checkpoint, evalIntervalSteps, logIntervalSteps, "
                "exportPath, exportExternalData, precision, tensorboard, timeline)");
}

TEST(JobParserTest, RejectsSeveralDocumentsAndEmptyFiles) {
  const std::string two = kJobFixtures + "/bad/two-documents.yaml";
  EXPECT_EQ(ErrorOf([&] { LoadJobFile(two); }),
            two + ": expected one YAML document (one AutoDistJob), got 2");
  const std::string empty = kJobFixtures + "/bad/empty.yaml";
  EXPECT_EQ(ErrorOf([&] { LoadJobFile(empty); }),
            empty + ": the manifest is empty; expected an AutoDistJob (autodist.io/v1alpha1)");
  EXPECT_EQ(ErrorOf([] { ParseJob("- a\n- b\n", "list.yaml", ""); }),
            "list.yaml: expected a mapping with fields apiVersion, kind, metadata, spec, status, "
            "got a list");
}

TEST(JobParserTest, MissingFileIsNotFound) {
  const std::string message =
      ErrorOf([] { LoadJobFile("/nonexistent/job.yaml"); }, ErrorCode::kNotFound);
  EXPECT_NE(message.find("/nonexistent/job.yaml"), std::string::npos) << message;
}

}  // namespace
}  // namespace autodist::job
