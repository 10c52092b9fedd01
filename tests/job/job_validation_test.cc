// Every validation rule, each with a bad manifest made from tests/fixtures/jobs/full.yaml by one
// edit. Expected messages give the line of the field in full.yaml (counted by hand), its YAML path
// and what was expected.
#include <gtest/gtest.h>

#include "runtime/job/job_parser.h"
#include "tests/job/job_test_support.h"

namespace autodist::job {
namespace {

using testing::ErrorOf;
using testing::kJobFixtures;
using testing::ReadText;

struct BadCase {
  const char* name;
  std::string from;  // text of full.yaml to replace (must occur once)
  std::string to;
  std::string expected;  // the message starts with this
};

std::string Edited(const BadCase& bad) {
  std::string text = ReadText(kJobFixtures + "/full.yaml");
  const size_t at = text.find(bad.from);
  EXPECT_NE(at, std::string::npos) << bad.name << ": '" << bad.from << "' not in full.yaml";
  EXPECT_EQ(text.find(bad.from, at + 1), std::string::npos) << bad.name << ": ambiguous edit";
  if (at != std::string::npos) text.replace(at, bad.from.size(), bad.to);
  return text;
}

// The strategy section of full.yaml (lines 49-60), for cases that swap the builder family.
const std::string kPsStrategy =
    "    builder: PartitionedPS\n"
    "    options:\n"
    "      sync: true\n"
    "      staleness: 2\n"
    "      localProxyVariable: true\n"
    "    colocation:\n"
    "      - [fc1.weight, fc1.bias]\n"
    "      - [fc2.weight]\n";
const std::string kArStrategy =
    "    builder: AllReduce\n"
    "    options:\n"
    "      chunkSize: 64\n"
    "      compressor: HorovodCompressor\n"
    "      allReduceSpec: RING\n";

const BadCase kCases[] = {
    // Header.
    {"ApiVersion", "apiVersion: autodist.io/v1alpha1", "apiVersion: autodist.io/v1",
     "job.yaml:3: apiVersion: expected \"autodist.io/v1alpha1\", got \"autodist.io/v1\""},
    {"Kind", "kind: AutoDistJob", "kind: TFJob",
     "job.yaml:4: kind: expected \"AutoDistJob\", got \"TFJob\""},
    {"MissingKind", "kind: AutoDistJob\n", "", "job.yaml: kind: required field is missing"},
    {"UnknownTopLevelField", "\nspec:\n", "\nsepc:\n",
     "job.yaml:13: sepc: unknown field (expected one of: apiVersion, kind, metadata, spec, "
     "status)"},
    // Metadata.
    {"NameUppercase", "  name: fmnist-full", "  name: FMNIST",
     "job.yaml:6: metadata.name: expected a DNS-1035 label (lowercase letters, digits and '-', at "
     "most 63 characters, starting with a letter and ending with a letter or digit), got "
     "\"FMNIST\""},
    {"NameStartsWithDigit", "  name: fmnist-full", "  name: 1fmnist",
     "job.yaml:6: metadata.name: expected a DNS-1035 label"},
    {"NameEndsWithDash", "  name: fmnist-full", "  name: fmnist-",
     "job.yaml:6: metadata.name: expected a DNS-1035 label"},
    {"NameTooLong", "  name: fmnist-full", "  name: " + std::string(64, 'a'),
     "job.yaml:6: metadata.name: expected a DNS-1035 label"},
    {"NameMissing", "  name: fmnist-full\n", "",
     "job.yaml:5: metadata.name: required field is missing"},
    {"NameNotAString", "  name: fmnist-full", "  name: {first: a}",
     "job.yaml:6: metadata.name: expected a string, got a mapping"},
    {"Namespace", "  namespace: training", "  namespace: Training_1",
     "job.yaml:7: metadata.namespace: expected a DNS-1123 label"},
    {"UnknownMetadataField", "  namespace: training", "  namespce: training",
     "job.yaml:7: metadata.namespce: unknown field (expected one of: name, namespace, labels, "
     "annotations, uid, resourceVersion, generation, generateName,"},
    {"LabelValue", "    team: vision", "    team: \"-vision\"",
     "job.yaml:9: metadata.labels.team: expected a label value"},
    {"LabelKey", "    team: vision", "    \"bad key!\": vision",
     "job.yaml:9: metadata.labels[\"bad key!\"]: invalid key"},
    {"LabelValueNotAString", "    team: vision", "    team: [a]",
     "job.yaml:9: metadata.labels.team: expected a string, got a list"},
    // Model.
    {"ModelPathAndConfigMap", "    path: models/mlp.onnx\n",
     "    path: models/mlp.onnx\n    configMap: {name: fmnist-model}\n",
     "job.yaml:16: spec.model.configMap: give either path or configMap, not both"},
    {"ModelNeither", "    path: models/mlp.onnx\n", "",
     "job.yaml:14: spec.model: one of path (an ONNX file) or configMap is required"},
    {"ModelEmptyPath", "    path: models/mlp.onnx", "    path: \"\"",
     "job.yaml:15: spec.model.path: must not be empty"},
    {"ConfigMapName", "    path: models/mlp.onnx", "    configMap: {name: Model_1}",
     "job.yaml:15: spec.model.configMap.name: expected a ConfigMap name"},
    {"ConfigMapKey", "    path: models/mlp.onnx", "    configMap: {name: m, key: a/b}",
     "job.yaml:15: spec.model.configMap.key: expected a ConfigMap key"},
    {"ConfigMapWithoutName", "    path: models/mlp.onnx", "    configMap: {key: m.onnx}",
     "job.yaml:15: spec.model.configMap.name: required field is missing"},
    {"ConfigMapUnknownField", "    path: models/mlp.onnx", "    configMap: {name: m, ky: x}",
     "job.yaml:15: spec.model.configMap.ky: unknown field (expected one of: name, key)"},
    {"EmptyLoss", "    loss: loss", "    loss:",
     "job.yaml:16: spec.model.loss: expected a string, "
     "got an empty value"},
    // Data.
    {"DataFormat", "    format: files", "    format: csv",
     "job.yaml:20: spec.data.format: expected one of: fashion-mnist, files; got \"csv\""},
    {"DataFormatMissing", "    format: files\n", "",
     "job.yaml:19: spec.data.format: required field is missing"},
    {"FilesWithoutTrain",
     "    train:\n      image: data/train-images.npy\n      label: data/train-labels.idx.gz\n", "",
     "job.yaml:19: spec.data.train: required field is missing"},
    {"FilesEmptyTrain",
     "    train:\n      image: data/train-images.npy\n      label: data/train-labels.idx.gz\n",
     "    train: {}\n",
     "job.yaml:21: spec.data.train: expected at least one graph input: file entry"},
    {"FilesEmptyPath", "      image: data/train-images.npy", "      image: \"\"",
     "job.yaml:22: spec.data.train.image: must not be empty"},
    {"FilesWithDir", "    format: files\n", "    format: files\n    dir: /data\n",
     "job.yaml:21: spec.data.dir: only for format fashion-mnist"},
    {"FashionMnistWithTrain", "    format: files", "    format: fashion-mnist",
     "job.yaml:21: spec.data.train: only for format files"},
    {"BatchZero", "    batchSizePerReplica: 32", "    batchSizePerReplica: 0",
     "job.yaml:27: spec.data.batchSizePerReplica: expected an integer >= 1, got \"0\""},
    {"BatchNotANumber", "    batchSizePerReplica: 32", "    batchSizePerReplica: 3.5",
     "job.yaml:27: spec.data.batchSizePerReplica: expected an integer >= 1, got \"3.5\""},
    {"BatchMissing", "    batchSizePerReplica: 32\n", "",
     "job.yaml:19: spec.data.batchSizePerReplica: required field is missing"},
    {"EvalBatchZero", "    evalBatchSize: 500", "    evalBatchSize: 0",
     "job.yaml:28: spec.data.evalBatchSize: expected an integer >= 1, got \"0\""},
    {"Shuffle", "    shuffle: false", "    shuffle: maybe",
     "job.yaml:29: spec.data.shuffle: expected true or false, got \"maybe\""},
    {"SeedNegative", "    seed: 7", "    seed: -1",
     "job.yaml:30: spec.data.seed: expected an integer >= 0, got \"-1\""},
    // Training.
    {"EpochsAndSteps", "    steps: 2000\n", "    steps: 2000\n    epochs: 3\n",
     "job.yaml:32: spec.training.steps: give either epochs or steps, not both"},
    {"NeitherEpochsNorSteps", "    steps: 2000\n", "",
     "job.yaml:31: spec.training: one of epochs or steps is required"},
    {"StepsZero", "    steps: 2000", "    steps: 0",
     "job.yaml:32: spec.training.steps: expected an integer >= 1, got \"0\""},
    {"EpochsNotANumber", "    steps: 2000", "    epochs: two",
     "job.yaml:32: spec.training.epochs: expected an integer >= 1, got \"two\""},
    {"OptimizerMissing",
     "    optimizer:\n      name: adamw\n      lr: 0.002\n      betas: [0.8, 0.99]\n"
     "      weightDecay: 0.05\n",
     "", "job.yaml:31: spec.training.optimizer: required field is missing"},
    {"OptimizerWithoutName", "      name: adamw\n", "",
     "job.yaml:33: spec.training.optimizer.name: required field is missing"},
    {"OptimizerUnknown", "      name: adamw", "      name: nadam",
     "job.yaml:33: spec.training.optimizer: unknown optimizer 'nadam'; valid: sgd, adam, adamw, "
     "adagrad, rmsprop"},
    {"OptimizerOptionNotTaken", "      weightDecay: 0.05", "      momentum: 0.9",
     "job.yaml:33: spec.training.optimizer: optimizer adamw does not take option 'momentum'; it "
     "takes: lr, betas, beta1, beta2, eps, weight_decay, amsgrad, lazy_sparse"},
    {"OptimizerBadValue", "      lr: 0.002", "      lr: fast",
     "job.yaml:33: spec.training.optimizer: optimizer adamw: option lr: expected a finite number, "
     "got 'fast'"},
    {"OptimizerOptionNotAValue", "      lr: 0.002", "      lr: {value: 1}",
     "job.yaml:35: spec.training.optimizer.lr: expected a value or a list of values, got a "
     "mapping"},
    {"ScheduleKind", "      kind: cosine", "      kind: linear",
     "job.yaml:38: spec.training.lrSchedule: learning-rate schedule: option kind: unknown "
     "'linear'; valid: constant, step, cosine"},
    {"CosineWithEpochsNeedsTotalSteps", "    steps: 2000", "    epochs: 2",
     "job.yaml:38: spec.training.lrSchedule: learning-rate schedule: option total_steps must "
     "exceed warmup_steps (100) for kind cosine, got 0"},
    {"ScheduleOptionNotTaken", "      minLr: 0.0001", "      gamma: 0.5",
     "job.yaml:38: spec.training.lrSchedule: learning-rate schedule of kind cosine does not take "
     "option 'gamma'"},
    {"CheckpointInterval", "      intervalSteps: 500", "      intervalSteps: -1",
     "job.yaml:44: spec.training.checkpoint.intervalSteps: expected an integer >= 0, got \"-1\""},
    {"CheckpointWithoutPath", "      path: ckpt/\n", "",
     "job.yaml:42: spec.training.checkpoint.path: required field is missing"},
    {"CheckpointResume", "      resume: false", "      resume: later",
     "job.yaml:45: spec.training.checkpoint.resume: expected true or false, got \"later\""},
    {"CheckpointKeep", "      keep: 5", "      keep: -2",
     "job.yaml:46: spec.training.checkpoint.keep: expected an integer >= 0, got \"-2\""},
    {"ExportExternalData", "    exportExternalData: true", "    exportExternalData: maybe",
     "job.yaml:50: spec.training.exportExternalData: expected true or false, got \"maybe\""},
    {"PrecisionUnknown", "    exportExternalData: true",
     "    exportExternalData: true\n    precision: fp16",
     "job.yaml:51: spec.training.precision: expected fp32, tf32 or bf16, got \"fp16\""},
    {"PrecisionBf16WithoutGpus", "    exportExternalData: true",
     "    exportExternalData: true\n    precision: bf16",
     "job.yaml:51: spec.training.precision: bf16 is for GPUs, and the job asks for none "
     "(spec.resources.gpusPerWorker is 0); the CPUs compute fp32"},
    {"PrecisionTf32WithoutGpus", "    exportExternalData: true",
     "    exportExternalData: true\n    precision: tf32",
     "job.yaml:51: spec.training.precision: tf32 is for GPUs, and the job asks for none "
     "(spec.resources.gpusPerWorker is 0); the CPUs compute fp32"},
    {"TensorBoardWithoutPath", "    exportExternalData: true",
     "    exportExternalData: true\n    tensorboard: {}",
     "job.yaml:51: spec.training.tensorboard.path: required field is missing"},
    {"TensorBoardEmptyPath", "    exportExternalData: true",
     "    exportExternalData: true\n    tensorboard: {path: \"\"}",
     "job.yaml:51: spec.training.tensorboard.path: must not be empty"},
    {"TensorBoardUnknownField", "    exportExternalData: true",
     "    exportExternalData: true\n    tensorboard: {path: runs, every: 5}",
     "job.yaml:51: spec.training.tensorboard.every: unknown field (expected one of: path)"},
    {"TensorBoardNotAMapping", "    exportExternalData: true",
     "    exportExternalData: true\n    tensorboard: runs/",
     "job.yaml:51: spec.training.tensorboard: expected a mapping with fields path, got \"runs/\""},
    {"TimelineWithoutPath", "    exportExternalData: true",
     "    exportExternalData: true\n    timeline: {}",
     "job.yaml:51: spec.training.timeline.path: required field is missing"},
    {"TimelineEmptyPath", "    exportExternalData: true",
     "    exportExternalData: true\n    timeline: {path: \"\"}",
     "job.yaml:51: spec.training.timeline.path: must not be empty"},
    {"TimelineNotAMapping", "    exportExternalData: true",
     "    exportExternalData: true\n    timeline: traces/",
     "job.yaml:51: spec.training.timeline: expected a mapping with fields path, got \"traces/\""},
    {"EvalInterval", "    evalIntervalSteps: 250", "    evalIntervalSteps: -5",
     "job.yaml:47: spec.training.evalIntervalSteps: expected an integer >= 0, got \"-5\""},
    {"LogInterval", "    logIntervalSteps: 50", "    logIntervalSteps: 0",
     "job.yaml:48: spec.training.logIntervalSteps: expected an integer >= 1, got \"0\""},
    {"ExportPathEmpty", "    exportPath: out/trained.onnx", "    exportPath: \"\"",
     "job.yaml:49: spec.training.exportPath: must not be empty"},
    // Strategy.
    {"BuilderUnknown", "    builder: PartitionedPS", "    builder: PSLB",
     "job.yaml:52: spec.strategy.builder: expected one of: PS, PSLoadBalancing, PartitionedPS, "
     "UnevenPartitionedPS, AllReduce, PartitionedAR, RandomAxisPartitionAR, Parallax, Auto; got "
     "\"PSLB\""},
    {"OptionNotTakenByBuilder", "      staleness: 2", "      chunkSize: 64",
     "job.yaml:53: spec.strategy.options: builder PartitionedPS does not take option "
     "'chunkSize'; it takes: compressor, local_proxy_variable, staleness, sync, topk_fraction"},
    {"OptionBadValue", "      staleness: 2", "      staleness: -1",
     "job.yaml:53: spec.strategy.options: builder PartitionedPS: option staleness must be >= 0, "
     "got -1"},
    {"OptionNotABool", "      sync: true", "      sync: often",
     "job.yaml:53: spec.strategy.options: builder PartitionedPS: option sync: expected true or "
     "false, got 'often'"},
    {"StalenessNeedsSync", "      sync: true", "      sync: false",
     "job.yaml:53: spec.strategy.options: staleness=2 needs sync=true"},
    {"OptionNotAValue", "      sync: true", "      sync: [true]",
     "job.yaml:54: spec.strategy.options.sync: expected a string, got a list"},
    {"AutoTakesOnlySyncAndStaleness", "    builder: PartitionedPS", "    builder: Auto",
     "job.yaml:53: spec.strategy.options: builder Auto does not take option"},
    {"CompressorUnknown", kPsStrategy,
     "    builder: AllReduce\n    options:\n      compressor: Zip\n",
     "job.yaml:53: spec.strategy.options: builder AllReduce: option compressor: unknown value "
     "'Zip'; valid: NoneCompressor, HorovodCompressor, HorovodCompressorEF"},
    {"AllReduceSpecUnknown", kPsStrategy,
     "    builder: AllReduce\n    options:\n      allReduceSpec: MPI\n",
     "job.yaml:53: spec.strategy.options: builder AllReduce: option all_reduce_spec: unknown value "
     "'MPI'; valid: AUTO, NCCL, RING"},
    {"ColocationWithAllReduce", kPsStrategy,
     kArStrategy + "    colocation:\n      - [fc1.weight, fc1.bias]\n",
     "job.yaml:57: spec.strategy.colocation: builder AllReduce places no variable on a parameter "
     "server, so colocation groups do not apply"},
    {"AllReduceWithParameterServers", kPsStrategy, kArStrategy,
     "job.yaml:64: spec.resources.parameterServers: builder AllReduce all-reduces every variable, "
     "so no variable would live on the 2 parameter server(s)"},
    {"PartitionedArWithParameterServers", kPsStrategy, "    builder: PartitionedAR\n",
     "job.yaml:60: spec.resources.parameterServers: builder PartitionedAR all-reduces every "
     "variable"},
    {"ColocationNotAList",
     "    colocation:\n      - [fc1.weight, fc1.bias]\n      - [fc2.weight]\n",
     "    colocation: fc1\n",
     "job.yaml:57: spec.strategy.colocation: expected a list of groups (lists of variable names), "
     "got \"fc1\""},
    {"ColocationEmptyGroup", "      - [fc2.weight]", "      - []",
     "job.yaml:59: spec.strategy.colocation[1]: expected a non-empty list of variable names, got a "
     "list"},
    {"ColocationVariableTwice", "      - [fc2.weight]", "      - [fc1.bias]",
     "job.yaml:59: spec.strategy.colocation[1][0]: variable 'fc1.bias' is already in group "
     "spec.strategy.colocation[0]; a variable can be in one group"},
    {"StateReduction", "      bn1.running_var: Sum", "      bn1.running_var: Max",
     "job.yaml:61: spec.strategy.stateReduction[\"bn1.running_var\"]: expected one of: Mean, Sum; "
     "got \"Max\""},
    // Resources.
    {"WorkersNotANumber", "    workers: 3", "    workers: two",
     "job.yaml:64: spec.resources.workers: expected an integer >= 1, got \"two\""},
    {"WorkersZero", "    workers: 3", "    workers: 0",
     "job.yaml:64: spec.resources.workers: expected an integer >= 1, got \"0\""},
    {"WorkersTooMany", "    workers: 3", "    workers: 3000000000",
     "job.yaml:64: spec.resources.workers: expected an integer between 1 and 2147483647, got "
     "\"3000000000\""},
    {"WorkersTwice", "    workers: 3\n", "    workers: 3\n    workers: 4\n",
     "job.yaml:65: spec.resources.workers: field appears twice"},
    {"GpusNegative", "    gpusPerWorker: 0", "    gpusPerWorker: -1",
     "job.yaml:65: spec.resources.gpusPerWorker: expected an integer >= 0, got \"-1\""},
    {"ReplicasZero", "    replicasPerWorker: 2", "    replicasPerWorker: 0",
     "job.yaml:66: spec.resources.replicasPerWorker: expected an integer >= 1, got \"0\""},
    {"ReplicasWithGpus", "    gpusPerWorker: 0", "    gpusPerWorker: 1",
     "job.yaml:66: spec.resources.replicasPerWorker: must be 1 when gpusPerWorker > 0 (each GPU is "
     "one replica), got 2"},
    {"ParameterServersNegative", "    parameterServers: 2", "    parameterServers: -1",
     "job.yaml:67: spec.resources.parameterServers: expected an integer >= 0, got \"-1\""},
    {"CpuQuantity", "    cpu: 1500m", "    cpu: 2 cores",
     "job.yaml:68: spec.resources.cpu: expected a non-negative Kubernetes quantity such as "
     "\"500m\", \"2\" or \"1.5\", got \"2 cores\""},
    {"MemoryQuantity", "    memory: 4Gi", "    memory: 4GB",
     "job.yaml:69: spec.resources.memory: expected a non-negative Kubernetes quantity such as "
     "\"128Mi\", \"4Gi\", \"1e9\" or \"1G\", got \"4GB\""},
    {"MemoryNegative", "    memory: 4Gi", "    memory: -4Gi",
     "job.yaml:69: spec.resources.memory: expected a non-negative Kubernetes quantity"},
    // Run policy.
    {"BackoffLimit", "    backoffLimit: 4", "    backoffLimit: -1",
     "job.yaml:71: spec.runPolicy.backoffLimit: expected an integer >= 0, got \"-1\""},
    {"ActiveDeadline", "    activeDeadlineSeconds: 7200", "    activeDeadlineSeconds: 0",
     "job.yaml:72: spec.runPolicy.activeDeadlineSeconds: expected an integer >= 1, got \"0\""},
    {"Ttl", "    ttlSecondsAfterFinished: 300", "    ttlSecondsAfterFinished: soon",
     "job.yaml:73: spec.runPolicy.ttlSecondsAfterFinished: expected an integer >= 0, got "
     "\"soon\""},
    {"CleanPodPolicy", "    cleanPodPolicy: All", "    cleanPodPolicy: all",
     "job.yaml:74: spec.runPolicy.cleanPodPolicy: expected one of: None, Running, All; got "
     "\"all\""},
    {"Suspend", "    suspend: true", "    suspend: sometimes",
     "job.yaml:75: spec.runPolicy.suspend: expected true or false, got \"sometimes\""},
    // Template.
    {"TemplateUnknownField", "    spec:\n      nodeSelector:", "    specs:\n      nodeSelector:",
     "job.yaml:80: spec.template.specs: unknown field (expected one of: metadata, spec)"},
    {"TemplateSpecNotAMap",
     "    spec:\n      nodeSelector:\n        pool: cpu\n      containers:\n        - name: "
     "autodist\n"
     "          env:\n            - name: PORT\n              value: \"8080\"\n",
     "    spec: [a]\n", "job.yaml:80: spec.template.spec: expected a mapping, got a list"},
};

std::string CaseName(const ::testing::TestParamInfo<BadCase>& param) { return param.param.name; }

class BadManifestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadManifestTest, NamesLinePathAndExpectation) {
  const BadCase& bad = GetParam();
  const std::string text = Edited(bad);
  const std::string message = ErrorOf([&] { ParseJob(text, "job.yaml", "/jobs"); });
  EXPECT_EQ(message.substr(0, bad.expected.size()), bad.expected) << "full message: " << message;
}

INSTANTIATE_TEST_SUITE_P(AllRules, BadManifestTest, ::testing::ValuesIn(kCases), CaseName);

TEST(JobValidationTest, TemplateMustBeAMapping) {
  std::string text = ReadText(kJobFixtures + "/minimal.yaml");
  EXPECT_EQ(
      ErrorOf([&] { ParseJob(text + "  template: [pod]\n", "job.yaml", ""); }),
      "job.yaml:17: spec.template: expected a mapping with fields metadata, spec, got a list");
  EXPECT_EQ(ErrorOf([&] { ParseJob(text + "  template:\n    spec: [pod]\n", "job.yaml", ""); }),
            "job.yaml:18: spec.template.spec: expected a mapping, got a list");
}

TEST(JobValidationTest, PsBuildersAcceptWorkersHostingTheParameterServers) {
  std::string text = ReadText(kJobFixtures + "/full.yaml");
  const std::string from = "    parameterServers: 2";
  text.replace(text.find(from), from.size(), "    parameterServers: 0");
  EXPECT_EQ(ParseJob(text, "job.yaml", "").resources.parameter_servers, 0);
}

TEST(JobValidationTest, AllReduceWithoutParameterServersIsFine) {
  std::string text = ReadText(kJobFixtures + "/full.yaml");
  text.replace(text.find(kPsStrategy), kPsStrategy.size(), kArStrategy);
  const std::string from = "    parameterServers: 2";
  text.replace(text.find(from), from.size(), "    parameterServers: 0");
  const JobSpec job = ParseJob(text, "job.yaml", "");
  EXPECT_EQ(job.strategy.builder, "AllReduce");
  EXPECT_EQ(job.strategy.options.at("compressor"), "HorovodCompressor");
}

}  // namespace
}  // namespace autodist::job
