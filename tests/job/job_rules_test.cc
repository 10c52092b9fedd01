// The validation rules of the job parser that job_validation_test.cc (one edit of full.yaml per
// rule) does not reach: one bad manifest per rule, made from a small valid manifest by one edit,
// each expected to fail naming the field's YAML path and what was expected. Together the two files
// cover every check of runtime/job/*.cc and every option check the parser delegates (optimizer,
// learning-rate schedule, strategy builders); docs/job-reference.md lists the rules.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"
#include "tests/job/job_test_support.h"

namespace autodist::job {
namespace {

using testing::ErrorOf;
using testing::kJobFixtures;

// A valid manifest; every rule below is this text with one edit (`from` replaced by `to`).
constexpr char kBase[] = R"(apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: rules
spec:
  model:
    path: model.onnx
  data:
    format: fashion-mnist
    batchSizePerReplica: 16
  training:
    steps: 1000
    optimizer:
      name: sgd
      lr: 0.1
  strategy:
    builder: PS
  resources:
    workers: 2
)";

struct Rule {
  const char* name;
  std::string from;  // text of kBase to replace (must occur once)
  std::string to;
  std::string path;      // the YAML path the message must name ("job.yaml:<line>: <path>: ")
  std::string expected;  // what the message must say after the path
};

std::string Edited(const std::string& base, const std::string& from, const std::string& to,
                   const std::string& name) {
  std::string text = base;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << name << ": '" << from << "' not in the base manifest";
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << name << ": ambiguous edit";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Frequent edits: a line added to a section.
std::string Metadata(const std::string& lines) { return "  name: rules\n" + lines; }
std::string Model(const std::string& lines) { return "    path: model.onnx\n" + lines; }
std::string Data(const std::string& lines) { return "    batchSizePerReplica: 16\n" + lines; }
std::string Training(const std::string& lines) { return "    steps: 1000\n" + lines; }
std::string Strategy(const std::string& lines) { return "    builder: PS\n" + lines; }
std::string Resources(const std::string& lines) { return "    workers: 2\n" + lines; }

const std::string kOptimizer = "    optimizer:\n      name: sgd\n      lr: 0.1\n";
const std::string kStrategy = "  strategy:\n    builder: PS\n";
const std::string kFilesData = "    format: files\n    train: {image: x.npy, label: y.idx}\n";

const Rule kRules[] = {
    // The document and its header (job_parser.cc).
    {"ApiVersionMissing", "apiVersion: autodist.io/v1alpha1\n", "", "apiVersion",
     "required field is missing"},
    {"ApiVersionNotAString", "apiVersion: autodist.io/v1alpha1", "apiVersion: [v1]", "apiVersion",
     "expected a string, got a list"},
    {"MetadataMissing", "metadata:\n  name: rules\n", "", "metadata", "required field is missing"},
    {"MetadataNotAMapping", "metadata:\n  name: rules\n", "metadata: rules\n", "metadata",
     "expected a mapping with fields name, namespace, labels, annotations, uid, resourceVersion, "
     "generation, generateName, selfLink, creationTimestamp, deletionTimestamp, "
     "deletionGracePeriodSeconds, ownerReferences, finalizers, managedFields, got \"rules\""},
    {"SpecMissing", std::string(kBase).substr(std::string(kBase).find("spec:")), "", "spec",
     "required field is missing"},
    {"SpecNotAMapping", std::string(kBase).substr(std::string(kBase).find("spec:")), "spec: []\n",
     "spec",
     "expected a mapping with fields model, data, training, strategy, resources, runPolicy, "
     "template, got a list"},
    {"SpecUnknownField", "  strategy:\n", "  strategies:\n", "spec.strategies",
     "unknown field (expected one of: model, data, training, strategy, resources, runPolicy, "
     "template)"},
    {"ModelMissing", "  model:\n    path: model.onnx\n", "", "spec.model",
     "required field is missing"},
    {"DataMissing", "  data:\n    format: fashion-mnist\n    batchSizePerReplica: 16\n", "",
     "spec.data", "required field is missing"},
    {"TrainingMissing", "  training:\n    steps: 1000\n" + kOptimizer, "", "spec.training",
     "required field is missing"},
    {"FieldNameNotAString", "    workers: 2\n", "    workers: 2\n    ? [gpus]\n    : 1\n",
     "spec.resources", "field names must be strings, got a list"},
    // metadata (parse_cluster.cc).
    {"LabelsNotAMapping", Metadata(""), Metadata("  labels: [team]\n"), "metadata.labels",
     "expected a mapping, got a list"},
    {"LabelTwice", Metadata(""), Metadata("  labels:\n    team: a\n    team: b\n"),
     "metadata.labels.team", "field appears twice"},
    {"AnnotationKey", Metadata(""), Metadata("  annotations:\n    \"not a key\": x\n"),
     "metadata.annotations[\"not a key\"]",
     "invalid key: expected an optional DNS subdomain prefix and '/', then a name of at most 63 "
     "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"},
    {"AnnotationKeyPrefix", Metadata(""), Metadata("  annotations:\n    Example.com/note: x\n"),
     "metadata.annotations[\"Example.com/note\"]", "invalid key"},
    {"AnnotationValueNotAString", Metadata(""), Metadata("  annotations:\n    note: {a: b}\n"),
     "metadata.annotations.note", "expected a string, got a mapping"},
    {"GenerationNegative", Metadata(""), Metadata("  generation: -1\n"), "metadata.generation",
     "expected an integer >= 0, got \"-1\""},
    {"UidNotAString", Metadata(""), Metadata("  uid: [a]\n"), "metadata.uid",
     "expected a string, got a list"},
    {"ResourceVersionNotAString", Metadata(""), Metadata("  resourceVersion: {v: 1}\n"),
     "metadata.resourceVersion", "expected a string, got a mapping"},
    {"NamespaceEmpty", Metadata(""), Metadata("  namespace: \"\"\n"), "metadata.namespace",
     "expected a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters, "
     "starting and ending with a letter or digit), got \"\""},
    // spec.model (parse_model_data.cc).
    {"ModelNotAMapping", "    path: model.onnx\n", "    - model.onnx\n", "spec.model",
     "expected a mapping with fields path, configMap, loss, logits, labels, got a list"},
    {"ModelUnknownField", "    path: model.onnx", "    file: model.onnx", "spec.model.file",
     "unknown field (expected one of: path, configMap, loss, logits, labels)"},
    {"ModelPathNotAString", "    path: model.onnx", "    path: [model.onnx]", "spec.model.path",
     "expected a string, got a list"},
    {"ConfigMapNotAMapping", "    path: model.onnx", "    configMap: fmnist-model",
     "spec.model.configMap", "expected a mapping with fields name, key, got \"fmnist-model\""},
    {"ConfigMapNameTooLong", "    path: model.onnx",
     "    configMap: {name: " + std::string(254, 'a') + "}", "spec.model.configMap.name",
     "expected a ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 characters, "
     "starting and ending with a letter or digit)"},
    {"ConfigMapKeyDotDot", "    path: model.onnx", "    configMap: {name: m, key: \"..\"}",
     "spec.model.configMap.key",
     "expected a ConfigMap key (letters, digits, '-', '_' and '.', at most 253 characters), got "
     "\"..\""},
    {"LossEmpty", Model(""), Model("    loss: \"\"\n"), "spec.model.loss", "must not be empty"},
    {"LogitsEmpty", Model(""), Model("    logits: \"\"\n"), "spec.model.logits",
     "must not be empty"},
    {"LabelsEmpty", Model(""), Model("    labels: \"\"\n"), "spec.model.labels",
     "must not be empty"},
    {"LabelsNotAString", Model(""), Model("    labels: [label]\n"), "spec.model.labels",
     "expected a string, got a list"},
    // spec.data.
    {"DataNotAMapping", "    format: fashion-mnist\n    batchSizePerReplica: 16\n",
     "    - fashion-mnist\n", "spec.data",
     "expected a mapping with fields format, dir, train, eval, batchSizePerReplica, "
     "evalBatchSize, shuffle, seed, got a list"},
    {"DataUnknownField", Data(""), Data("    batchSize: 16\n"), "spec.data.batchSize",
     "unknown field (expected one of: format, dir, train, eval, batchSizePerReplica, "
     "evalBatchSize, shuffle, seed)"},
    {"FormatNotAString", "    format: fashion-mnist", "    format: [files]", "spec.data.format",
     "expected a string, got a list"},
    {"FormatCase", "    format: fashion-mnist", "    format: Fashion-MNIST", "spec.data.format",
     "expected one of: fashion-mnist, files; got \"Fashion-MNIST\""},
    {"FashionMnistWithEval", Data(""), Data("    eval: {image: x.npy}\n"), "spec.data.eval",
     "only for format files (fashion-mnist trains on its train split and evaluates on its test "
     "split)"},
    {"FashionMnistDirEmpty", Data(""), Data("    dir: \"\"\n"), "spec.data.dir",
     "must not be empty"},
    {"FilesTrainNotAMapping", "    format: fashion-mnist\n",
     "    format: files\n    train: [x.npy]\n", "spec.data.train",
     "expected a mapping, got a list"},
    {"FilesEmptyGraphInput", "    format: fashion-mnist\n",
     "    format: files\n    train: {\"\": x.npy}\n", "spec.data.train[\"\"]",
     "graph input names must not be empty"},
    {"FilesInputTwice", "    format: fashion-mnist\n",
     "    format: files\n    train: {image: a.npy, image: b.npy}\n", "spec.data.train.image",
     "field appears twice"},
    {"FilesPathNotAString", "    format: fashion-mnist\n",
     "    format: files\n    train: {image: [a.npy]}\n", "spec.data.train.image",
     "expected a string, got a list"},
    {"FilesEvalEmpty", "    format: fashion-mnist\n", kFilesData + "    eval: {}\n",
     "spec.data.eval", "expected at least one graph input: file entry (e.g. image: x.npy)"},
    {"FilesEvalNotAMapping", "    format: fashion-mnist\n", kFilesData + "    eval: x.npy\n",
     "spec.data.eval", "expected a mapping, got \"x.npy\""},
    {"BatchTooLarge", "    batchSizePerReplica: 16", "    batchSizePerReplica: 1e3",
     "spec.data.batchSizePerReplica", "expected an integer >= 1, got \"1e3\""},
    {"EvalBatchNotANumber", Data(""), Data("    evalBatchSize: all\n"), "spec.data.evalBatchSize",
     "expected an integer >= 1, got \"all\""},
    {"ShuffleNotABool", Data(""), Data("    shuffle: 1\n"), "spec.data.shuffle",
     "expected true or false, got \"1\""},
    {"SeedOverflow", Data(""), Data("    seed: 18446744073709551615\n"), "spec.data.seed",
     "expected an integer between 0 and 9223372036854775807, got \"18446744073709551615\""},
    {"SeedNotANumber", Data(""), Data("    seed: random\n"), "spec.data.seed",
     "expected an integer >= 0, got \"random\""},
    // spec.training (parse_training.cc).
    {"TrainingNotAMapping", "  training:\n    steps: 1000\n" + kOptimizer, "  training: [steps]\n",
     "spec.training",
     "expected a mapping with fields epochs, steps, optimizer, lrSchedule, checkpoint, "
     "evalIntervalSteps, logIntervalSteps, exportPath, exportExternalData, precision, "
     "tensorboard, timeline, got a list"},
    {"TrainingUnknownField", Training(""), Training("    batchSize: 4\n"),
     "spec.training.batchSize",
     "unknown field (expected one of: epochs, steps, optimizer, lrSchedule, checkpoint, "
     "evalIntervalSteps, logIntervalSteps, exportPath, exportExternalData, precision, "
     "tensorboard, timeline)"},
    {"StepsOverflow", "    steps: 1000", "    steps: 99999999999999999999", "spec.training.steps",
     "expected an integer between 1 and 9223372036854775807, got \"99999999999999999999\""},
    {"EpochsZero", "    steps: 1000", "    epochs: 0", "spec.training.epochs",
     "expected an integer >= 1, got \"0\""},
    {"LogIntervalNotANumber", Training(""), Training("    logIntervalSteps: often\n"),
     "spec.training.logIntervalSteps", "expected an integer >= 1, got \"often\""},
    {"ExportPathNotAString", Training(""), Training("    exportPath: {file: a.onnx}\n"),
     "spec.training.exportPath", "expected a string, got a mapping"},
    // spec.training.optimizer: the parser's own checks, then optim::ParseOptimizerOptions'.
    {"OptimizerNotAMapping", kOptimizer, "    optimizer: sgd\n", "spec.training.optimizer",
     "expected a mapping, got \"sgd\""},
    {"OptimizerNameEmpty", "      name: sgd", "      name: \"\"", "spec.training.optimizer.name",
     "must not be empty"},
    {"OptimizerNameNotAString", "      name: sgd", "      name: [sgd]",
     "spec.training.optimizer.name", "expected a string, got a list"},
    {"OptimizerOptionTwice", "      lr: 0.1\n", "      lr: 0.1\n      LR: 0.2\n",
     "spec.training.optimizer", "optimizer sgd does not take option 'LR'; it takes: lr, momentum"},
    {"OptimizerOptionTwoSpellings", "      lr: 0.1\n",
     "      lr: 0.1\n      weightDecay: 0.1\n      weight_decay: 0.2\n", "spec.training.optimizer",
     "optimizer sgd: option 'weight_decay' is given twice (as 'weightDecay' and 'weight_decay')"},
    {"OptimizerOptionListItemNotAValue", kOptimizer,
     "    optimizer:\n      name: adam\n      betas: [[0.9], 0.99]\n",
     "spec.training.optimizer.betas[0]", "expected a string, got a list"},
    {"SgdNeedsLr", "      lr: 0.1\n", "", "spec.training.optimizer",
     "optimizer sgd: option lr is required (torch.optim.SGD has no default learning rate)"},
    {"LrNegative", "      lr: 0.1", "      lr: -0.1", "spec.training.optimizer",
     "optimizer sgd: option lr must be a finite number >= 0, got -0.1"},
    {"LrNotFinite", "      lr: 0.1", "      lr: inf", "spec.training.optimizer",
     "optimizer sgd: option lr: expected a finite number, got 'inf'"},
    {"MomentumNegative", "      lr: 0.1", "      lr: 0.1\n      momentum: -0.9",
     "spec.training.optimizer",
     "optimizer sgd: option momentum must be a finite number >= 0, got "
     "-0.9"},
    {"WeightDecayNegative", "      lr: 0.1", "      lr: 0.1\n      weightDecay: -1",
     "spec.training.optimizer",
     "optimizer sgd: option weight_decay must be a finite number >= 0, got -1"},
    {"NesterovWithoutMomentum", "      lr: 0.1", "      lr: 0.1\n      nesterov: true",
     "spec.training.optimizer",
     "optimizer sgd: nesterov=true requires momentum > 0 and dampening = 0, got momentum=0 "
     "dampening=0"},
    {"NesterovWithDampening", "      lr: 0.1",
     "      lr: 0.1\n      nesterov: true\n      momentum: 0.9\n      dampening: 0.1",
     "spec.training.optimizer",
     "optimizer sgd: nesterov=true requires momentum > 0 and dampening = 0, got momentum=0.9 "
     "dampening=0.1"},
    {"NesterovNotABool", "      lr: 0.1", "      lr: 0.1\n      nesterov: maybe",
     "spec.training.optimizer",
     "optimizer sgd: option nesterov: expected true or false, got "
     "'maybe'"},
    {"BetasAndBeta1", kOptimizer,
     "    optimizer:\n      name: adam\n      betas: [0.9, 0.99]\n      beta1: 0.8\n",
     "spec.training.optimizer", "optimizer adam: give either betas or beta1/beta2, not both"},
    {"BetasOneNumber", kOptimizer, "    optimizer:\n      name: adam\n      betas: [0.9]\n",
     "spec.training.optimizer",
     "optimizer adam: option betas: expected two numbers like '0.9,0.999', got '0.9'"},
    {"Beta2One", kOptimizer, "    optimizer:\n      name: adamw\n      beta2: 1\n",
     "spec.training.optimizer", "optimizer adamw: option beta2 must be in [0, 1), got 1"},
    {"EpsNegative", kOptimizer, "    optimizer:\n      name: adam\n      eps: -1e-8\n",
     "spec.training.optimizer",
     "optimizer adam: option eps must be a finite number >= 0, got "
     "-1e-08"},
    {"AmsgradNotABool", kOptimizer, "    optimizer:\n      name: adam\n      amsgrad: often\n",
     "spec.training.optimizer",
     "optimizer adam: option amsgrad: expected true or false, got 'often'"},
    {"AdagradLrDecayNegative", kOptimizer,
     "    optimizer:\n      name: adagrad\n      lrDecay: -1\n", "spec.training.optimizer",
     "optimizer adagrad: option lr_decay must be a finite number >= 0, got -1"},
    {"AdagradInitialAccumulatorNegative", kOptimizer,
     "    optimizer:\n      name: adagrad\n      initialAccumulatorValue: -1\n",
     "spec.training.optimizer",
     "optimizer adagrad: option initial_accumulator_value must be a finite number >= 0, got -1"},
    {"RmspropAlphaNegative", kOptimizer, "    optimizer:\n      name: rmsprop\n      alpha: -1\n",
     "spec.training.optimizer",
     "optimizer rmsprop: option alpha must be a finite number >= 0, got -1"},
    {"RmspropCenteredNotABool", kOptimizer,
     "    optimizer:\n      name: rmsprop\n      centered: 2\n", "spec.training.optimizer",
     "optimizer rmsprop: option centered: expected true or false, got '2'"},
    {"LazySparseNotABool", "      lr: 0.1", "      lr: 0.1\n      lazySparse: sometimes",
     "spec.training.optimizer",
     "optimizer sgd: option lazy_sparse: expected true or false, got 'sometimes'"},
    // spec.training.lrSchedule: the parser's checks, then optim::ParseScheduleOptions'.
    {"ScheduleNotAMapping", Training(""), Training("    lrSchedule: cosine\n"),
     "spec.training.lrSchedule", "expected a mapping, got \"cosine\""},
    {"ScheduleOptionNotAString", Training(""), Training("    lrSchedule: {kind: [step]}\n"),
     "spec.training.lrSchedule.kind", "expected a string, got a list"},
    {"ScheduleOptionTwice", Training(""),
     Training("    lrSchedule: {kind: step, stepSize: 10, step_size: 20}\n"),
     "spec.training.lrSchedule", "learning-rate schedule: option 'step_size' is given twice"},
    {"ScheduleOptionNotTakenByConstant", Training(""), Training("    lrSchedule: {minLr: 0.001}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule of kind constant does not take option 'minLr'; it takes: kind, "
     "warmup_steps, warmup_start_factor"},
    {"WarmupStepsNotAnInteger", Training(""), Training("    lrSchedule: {warmupSteps: 1.5}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule: option warmup_steps: expected an integer, got '1.5'"},
    {"WarmupStepsNegative", Training(""), Training("    lrSchedule: {warmupSteps: -1}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule: option warmup_steps must be >= 0, got -1"},
    {"WarmupStartFactorAboveOne", Training(""),
     Training("    lrSchedule: {warmupStartFactor: 2}\n"), "spec.training.lrSchedule",
     "learning-rate schedule: option warmup_start_factor must be in [0, 1], got 2"},
    {"StepWithoutStepSize", Training(""), Training("    lrSchedule: {kind: step}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule: option step_size must be > 0 for kind step, got 0"},
    {"GammaNotANumber", Training(""),
     Training("    lrSchedule: {kind: step, stepSize: 10, "
              "gamma: half}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule: option gamma: expected a finite number, got 'half'"},
    {"GammaNegative", Training(""),
     Training("    lrSchedule: {kind: step, stepSize: 10, gamma: -0.5}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule: option gamma must be a finite number >= 0, got -0.5"},
    {"MinLrNegative", Training(""), Training("    lrSchedule: {kind: cosine, minLr: -1}\n"),
     "spec.training.lrSchedule",
     "learning-rate schedule: option min_lr must be a finite number >= 0, got -1"},
    {"CosineWarmupAsLongAsTheTraining", Training(""),
     Training("    lrSchedule: {kind: cosine, warmupSteps: 1000}\n"), "spec.training.lrSchedule",
     "learning-rate schedule: option total_steps must exceed warmup_steps (1000) for kind cosine, "
     "got 1000"},
    // spec.training.checkpoint.
    {"CheckpointNotAMapping", Training(""), Training("    checkpoint: ckpt/\n"),
     "spec.training.checkpoint",
     "expected a mapping with fields path, intervalSteps, resume, keep, got \"ckpt/\""},
    {"CheckpointUnknownField", Training(""), Training("    checkpoint: {path: c, every: 5}\n"),
     "spec.training.checkpoint.every",
     "unknown field (expected one of: path, intervalSteps, resume, keep)"},
    {"CheckpointPathEmpty", Training(""), Training("    checkpoint: {path: \"\"}\n"),
     "spec.training.checkpoint.path", "must not be empty"},
    // spec.strategy (parse_strategy.cc, builder_check.cc and the builders' option readers).
    {"StrategyNotAMapping", kStrategy, "  strategy: PS\n", "spec.strategy",
     "expected a mapping with fields builder, options, colocation, stateReduction, "
     "allowLossyCompression, profile, got \"PS\""},
    {"StrategyUnknownField", Strategy(""), Strategy("    option: {sync: true}\n"),
     "spec.strategy.option",
     "unknown field (expected one of: builder, options, colocation, stateReduction, "
     "allowLossyCompression, profile)"},
    {"BuilderNotAString", "    builder: PS", "    builder: [PS]", "spec.strategy.builder",
     "expected a string, got a list"},
    {"BuilderCase", "    builder: PS", "    builder: allreduce", "spec.strategy.builder",
     "expected one of: PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS, AllReduce, "
     "PartitionedAR, RandomAxisPartitionAR, Parallax, Auto; got \"allreduce\""},
    {"OptionsNotAMapping", Strategy(""), Strategy("    options: [sync]\n"), "spec.strategy.options",
     "expected a mapping, got a list"},
    {"OptionInAnotherCase", Strategy(""), Strategy("    options: {sync: true, Sync: false}\n"),
     "spec.strategy.options", "builder PS: option 'sync' is given twice (as 'Sync' and 'sync')"},
    {"OptionGivenTwice", "    builder: PS\n",
     "    builder: AllReduce\n    options: {chunkSize: 8, chunk_size: 16}\n",
     "spec.strategy.options",
     "builder AllReduce: option 'chunk_size' is given twice (as 'chunkSize' and 'chunk_size')"},
    {"ChunkSizeZero", "    builder: PS\n", "    builder: AllReduce\n    options: {chunkSize: 0}\n",
     "spec.strategy.options", "builder AllReduce: option chunk_size must be >= 1, got 0"},
    {"ChunkSizeNotAnInteger", "    builder: PS\n",
     "    builder: PartitionedAR\n    options: {chunkSize: big}\n", "spec.strategy.options",
     "builder PartitionedAR: option chunk_size: expected an integer, got 'big'"},
    {"RandomAxisSeedNotAnInteger", "    builder: PS\n",
     "    builder: RandomAxisPartitionAR\n    options: {seed: 1.5}\n", "spec.strategy.options",
     "builder RandomAxisPartitionAR: option seed: expected an integer, got '1.5'"},
    {"LocalProxyVariableNotABool", Strategy(""),
     Strategy("    options: {localProxyVariable: sometimes}\n"), "spec.strategy.options",
     "builder PS: option local_proxy_variable: expected true or false, got 'sometimes'"},
    {"ParallaxStalenessNeedsSync", "    builder: PS\n",
     "    builder: Parallax\n    options: {sync: false, staleness: 1}\n", "spec.strategy.options",
     "staleness=1 needs sync=true: bounded staleness only applies to synchronous training"},
    {"PsBuilderTakesNoChunkSize", "    builder: PS\n",
     "    builder: UnevenPartitionedPS\n    options: {chunkSize: 4}\n", "spec.strategy.options",
     "builder UnevenPartitionedPS does not take option 'chunkSize'; it takes: "
     "compressor, local_proxy_variable, staleness, sync, topk_fraction"},
    {"AllReduceTakesNoSync", "    builder: PS\n",
     "    builder: AllReduce\n    options: {sync: true}\n", "spec.strategy.options",
     "builder AllReduce does not take option 'sync'; it takes: all_reduce_spec, chunk_size, "
     "compressor"},
    {"AutoTakesOnlySyncAndStaleness", "    builder: PS\n",
     "    builder: Auto\n    options: {chunkSize: 4}\n", "spec.strategy.options",
     "builder Auto does not take option 'chunkSize'; it takes: staleness, sync"},
    {"LossyCompressionIsForAuto", "    builder: PS\n",
     "    builder: PS\n    allowLossyCompression: true\n", "spec.strategy.allowLossyCompression",
     "applies to builder Auto only (it chooses the strategy); builder PS is named"},
    {"ProfileIsForAuto", "    builder: PS\n", "    builder: PS\n    profile: {path: p.json}\n",
     "spec.strategy.profile", "applies to builder Auto only"},
    {"ProfileNeedsOneSource", "    builder: PS\n",
     "    builder: Auto\n    profile: {path: p.json, configMap: {name: p}}\n",
     "spec.strategy.profile", "give one of path (a file `autodist profile` wrote) or configMap"},
    {"ProfileNeedsASource", "    builder: PS\n", "    builder: Auto\n    profile: {}\n",
     "spec.strategy.profile", "give one of path"},
    {"ColocationGroupNotAList", Strategy(""), Strategy("    colocation: [fc1.weight]\n"),
     "spec.strategy.colocation[0]",
     "expected a non-empty list of variable names, got \"fc1.weight\""},
    {"ColocationNameEmpty", Strategy(""), Strategy("    colocation: [[fc1.weight, \"\"]]\n"),
     "spec.strategy.colocation[0][1]", "must not be empty"},
    {"ColocationNameNotAString", Strategy(""), Strategy("    colocation: [[[fc1.weight]]]\n"),
     "spec.strategy.colocation[0][0]", "expected a string, got a list"},
    {"ColocationVariableTwiceInAGroup", Strategy(""),
     Strategy("    colocation: [[fc1.weight, fc1.weight]]\n"), "spec.strategy.colocation[0][1]",
     "variable 'fc1.weight' is already in group spec.strategy.colocation[0]; a variable can be in "
     "one group"},
    {"ColocationWithRandomAxisPartitionAR", "    builder: PS\n",
     "    builder: RandomAxisPartitionAR\n    colocation: [[a, b]]\n", "spec.strategy.colocation",
     "builder RandomAxisPartitionAR places no variable on a parameter server, so colocation "
     "groups do not apply; use PS, PSLoadBalancing, PartitionedPS, UnevenPartitionedPS or "
     "Parallax"},
    {"StateReductionNotAMapping", Strategy(""), Strategy("    stateReduction: [bn.mean]\n"),
     "spec.strategy.stateReduction", "expected a mapping, got a list"},
    {"StateReductionEmptyVariable", Strategy(""), Strategy("    stateReduction: {\"\": Sum}\n"),
     "spec.strategy.stateReduction[\"\"]", "variable names must not be empty"},
    {"StateReductionCase", Strategy(""), Strategy("    stateReduction: {bn.mean: sum}\n"),
     "spec.strategy.stateReduction[\"bn.mean\"]", "expected one of: Mean, Sum; got \"sum\""},
    {"StateReductionNotAString", Strategy(""), Strategy("    stateReduction: {bn.mean: [Sum]}\n"),
     "spec.strategy.stateReduction[\"bn.mean\"]", "expected a string, got a list"},
    // spec.resources (parse_cluster.cc) and the rule across sections (job_parser.cc).
    {"ResourcesNotAMapping", "  resources:\n    workers: 2\n", "  resources: 2\n", "spec.resources",
     "expected a mapping with fields workers, gpusPerWorker, replicasPerWorker, "
     "parameterServers, networkBandwidthGbps, cpu, memory, sharedMemory, nccl, got \"2\""},
    {"ResourcesUnknownField", Resources(""), Resources("    gpus: 1\n"), "spec.resources.gpus",
     "unknown field (expected one of: workers, gpusPerWorker, replicasPerWorker, "
     "parameterServers, networkBandwidthGbps, cpu, memory, sharedMemory, nccl)"},
    {"SharedMemoryInGB", Resources(""), Resources("    sharedMemory: 1GB\n"),
     "spec.resources.sharedMemory",
     "expected a non-negative Kubernetes quantity such as \"1Gi\" or \"512Mi\", got \"1GB\""},
    {"SharedMemoryZero", Resources(""), Resources("    sharedMemory: 0Gi\n"),
     "spec.resources.sharedMemory", "expected a size above 0, got \"0Gi\""},
    {"NcclNotAMapping", Resources(""), Resources("    nccl: eth0\n"), "spec.resources.nccl",
     "expected a mapping with fields socketIfname, debug, ibDisable, got \"eth0\""},
    {"NcclUnknownField", Resources(""), Resources("    nccl: {ibDisabled: true}\n"),
     "spec.resources.nccl.ibDisabled",
     "unknown field (expected one of: socketIfname, debug, ibDisable)"},
    {"NcclInterfaceWithASpace", Resources(""), Resources("    nccl: {socketIfname: eth 0}\n"),
     "spec.resources.nccl.socketIfname",
     "expected interface name prefixes separated by commas, optionally led by \"^\" (exclude) or "
     "\"=\" (exact), e.g. \"eth0\", \"^docker,lo\" (NCCL_SOCKET_IFNAME), got \"eth 0\""},
    {"NcclInterfaceListWithAnEmptyName", Resources(""),
     Resources("    nccl: {socketIfname: \"^eth0,,lo\"}\n"), "spec.resources.nccl.socketIfname",
     "(NCCL_SOCKET_IFNAME), got \"^eth0,,lo\""},
    {"NcclDebugLowercase", Resources(""), Resources("    nccl: {debug: info}\n"),
     "spec.resources.nccl.debug",
     "expected one of VERSION, WARN, INFO, TRACE (NCCL_DEBUG), got \"info\""},
    {"NcclIbDisableNotABoolean", Resources(""), Resources("    nccl: {ibDisable: sometimes}\n"),
     "spec.resources.nccl.ibDisable", "expected"},
    {"BandwidthZero", Resources(""), Resources("    networkBandwidthGbps: 0\n"),
     "spec.resources.networkBandwidthGbps",
     "expected each node's link in Gbit/s, above 0 and at most 100000, got 0"},
    {"BandwidthInBits", Resources(""), Resources("    networkBandwidthGbps: 1e9\n"),
     "spec.resources.networkBandwidthGbps", "at most 100000, got 1000000000"},
    {"BandwidthNotANumber", Resources(""), Resources("    networkBandwidthGbps: fast\n"),
     "spec.resources.networkBandwidthGbps", "expected a number"},
    {"WorkersNotAnInteger", "    workers: 2", "    workers: 2.0", "spec.resources.workers",
     "expected an integer >= 1, got \"2.0\""},
    {"GpusTooMany", Resources(""), Resources("    gpusPerWorker: 2147483648\n"),
     "spec.resources.gpusPerWorker",
     "expected an integer between 0 and 2147483647, got \"2147483648\""},
    {"ReplicasTooMany", Resources(""), Resources("    replicasPerWorker: 99999999999\n"),
     "spec.resources.replicasPerWorker",
     "expected an integer between 1 and 2147483647, got \"99999999999\""},
    {"ParameterServersNotAnInteger", Resources(""), Resources("    parameterServers: one\n"),
     "spec.resources.parameterServers", "expected an integer >= 0, got \"one\""},
    {"CpuNotAString", Resources(""), Resources("    cpu: [1]\n"), "spec.resources.cpu",
     "expected a string, got a list"},
    {"CpuEmpty", Resources(""), Resources("    cpu: \"\"\n"), "spec.resources.cpu",
     "expected a non-negative Kubernetes quantity such as \"500m\", \"2\" or \"1.5\", got \"\""},
    {"CpuTwoDots", Resources(""), Resources("    cpu: 1.5.5\n"), "spec.resources.cpu",
     "expected a non-negative Kubernetes quantity"},
    {"MemoryUnknownSuffix", Resources(""), Resources("    memory: 4gi\n"), "spec.resources.memory",
     "expected a non-negative Kubernetes quantity such as \"128Mi\", \"4Gi\", \"1e9\" or \"1G\", "
     "got \"4gi\""},
    {"RandomAxisPartitionArWithParameterServers", "    builder: PS\n  resources:\n    workers: 2\n",
     "    builder: RandomAxisPartitionAR\n  resources:\n    workers: 2\n    parameterServers: 1\n",
     "spec.resources.parameterServers",
     "builder RandomAxisPartitionAR all-reduces every variable, so no variable would live on the "
     "1 parameter server(s); set parameterServers to 0 or use a PS-family builder (PS, "
     "PSLoadBalancing, PartitionedPS, UnevenPartitionedPS, Parallax)"},
    // spec.runPolicy (parse_cluster.cc).
    {"RunPolicyNotAMapping", Resources(""), Resources("  runPolicy: Never\n"), "spec.runPolicy",
     "expected a mapping with fields restartPolicy, backoffLimit, activeDeadlineSeconds, "
     "ttlSecondsAfterFinished, cleanPodPolicy, suspend, schedulingPolicy, got \"Never\""},
    {"RunPolicyUnknownField", Resources(""), Resources("  runPolicy: {restartPolicies: Never}\n"),
     "spec.runPolicy.restartPolicies",
     "unknown field (expected one of: restartPolicy, backoffLimit, activeDeadlineSeconds, "
     "ttlSecondsAfterFinished, cleanPodPolicy, suspend, schedulingPolicy)"},
    {"RestartPolicyAlways", Resources(""), Resources("  runPolicy: {restartPolicy: Always}\n"),
     "spec.runPolicy.restartPolicy", "expected one of: Never, OnFailure, ExitCode; got \"Always\""},
    {"RestartPolicyLowercase", Resources(""), Resources("  runPolicy: {restartPolicy: never}\n"),
     "spec.runPolicy.restartPolicy", "expected one of: Never, OnFailure, ExitCode; got \"never\""},
    {"SchedulingPolicyNotAMapping", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: volcano}\n"), "spec.runPolicy.schedulingPolicy",
     "expected a mapping with fields schedulerName, queue, priorityClass, "
     "scheduleTimeoutSeconds, got \"volcano\""},
    {"SchedulingPolicyWithoutScheduler", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: {queue: research}}\n"),
     "spec.runPolicy.schedulingPolicy.schedulerName", "required field is missing"},
    {"SchedulingPolicyUnknownField", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: {schedulerName: volcano, minAvailable: 3}}\n"),
     "spec.runPolicy.schedulingPolicy.minAvailable",
     "unknown field (expected one of: schedulerName, queue, priorityClass, "
     "scheduleTimeoutSeconds)"},
    {"SchedulerNameNotASubdomain", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: {schedulerName: Volcano_Scheduler}}\n"),
     "spec.runPolicy.schedulingPolicy.schedulerName",
     "expected a scheduler name (a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', "
     "at most 253 characters), got \"Volcano_Scheduler\""},
    {"PriorityClassNotASubdomain", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: {schedulerName: volcano, priorityClass: High}}\n"),
     "spec.runPolicy.schedulingPolicy.priorityClass",
     "expected a PriorityClass name (a DNS-1123 subdomain: lowercase letters, digits, '-' and "
     "'.', at most 253 characters), got \"High\""},
    {"QueueEmpty", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: {schedulerName: volcano, queue: \"\"}}\n"),
     "spec.runPolicy.schedulingPolicy.queue", "must not be empty"},
    {"ScheduleTimeoutZero", Resources(""),
     Resources("  runPolicy: {schedulingPolicy: {schedulerName: volcano, "
               "scheduleTimeoutSeconds: 0}}\n"),
     "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
     "expected an integer >= 1, got \"0\""},
    {"BackoffLimitTooLarge", Resources(""), Resources("  runPolicy: {backoffLimit: 2147483648}\n"),
     "spec.runPolicy.backoffLimit",
     "expected an integer between 0 and 2147483647, got \"2147483648\""},
    {"ActiveDeadlineNegative", Resources(""),
     Resources("  runPolicy: {activeDeadlineSeconds: -60}\n"),
     "spec.runPolicy.activeDeadlineSeconds", "expected an integer >= 1, got \"-60\""},
    {"TtlTooLarge", Resources(""),
     Resources("  runPolicy: {ttlSecondsAfterFinished: 3000000000}\n"),
     "spec.runPolicy.ttlSecondsAfterFinished",
     "expected an integer between 0 and 2147483647, got \"3000000000\""},
    {"CleanPodPolicyNotAString", Resources(""), Resources("  runPolicy: {cleanPodPolicy: [All]}\n"),
     "spec.runPolicy.cleanPodPolicy", "expected a string, got a list"},
    // spec.template (parse_cluster.cc).
    {"TemplateAliasCycle", Resources(""), Resources("  template: &t {metadata: *t}\n"),
     "spec.template.metadata",
     "expected a tree, got an alias to a mapping or list that contains it (YAML anchors and "
     "aliases must not form a cycle)"},
    {"TemplateDeepAliasCycle", Resources(""),
     Resources("  template:\n    spec: &s\n      containers: [{name: a, env: *s}]\n"),
     "spec.template.spec.containers[0].env", "expected a tree, got an alias"},
    {"TemplateMetadataNotAMapping", Resources(""), Resources("  template: {metadata: pod}\n"),
     "spec.template.metadata", "expected a mapping, got \"pod\""},
};

// gtest prints the rule's name rather than its bytes.
void PrintTo(const Rule& rule, std::ostream* out) { *out << rule.name; }

std::string RuleName(const ::testing::TestParamInfo<Rule>& param) { return param.param.name; }

class RuleTest : public ::testing::TestWithParam<Rule> {};

// "job.yaml:<line>: <path>: <what was expected>".
TEST_P(RuleTest, MessageNamesThePathAndWhatWasExpected) {
  const Rule& rule = GetParam();
  const std::string text = Edited(kBase, rule.from, rule.to, rule.name);
  const std::string message = ErrorOf([&] { ParseJob(text, "job.yaml", "/jobs"); });
  ASSERT_EQ(message.rfind("job.yaml:", 0), 0U) << message;
  const size_t at = message.find(": " + rule.path + ": ");
  ASSERT_NE(at, std::string::npos) << "no path '" << rule.path << "' in: " << message;
  EXPECT_NE(message.find(rule.expected, at + rule.path.size() + 4), std::string::npos)
      << "expected '" << rule.expected << "' after the path in: " << message;
}

INSTANTIATE_TEST_SUITE_P(EveryRule, RuleTest, ::testing::ValuesIn(kRules), RuleName);

// The base is valid, so each rule's error comes from its edit; messages give the field's line.
TEST(JobRulesTest, BaseManifestIsValid) {
  const JobSpec job = ParseJob(kBase, "job.yaml", "/jobs");
  EXPECT_EQ(job.strategy.builder, "PS");
  EXPECT_EQ(TotalReplicas(job), 2);
}

TEST(JobRulesTest, MessagesGiveTheLineOfTheField) {
  EXPECT_EQ(ErrorOf([] {
              ParseJob(Edited(kBase, "    workers: 2", "    workers: 0", "line"), "job.yaml", "");
            }),
            "job.yaml:19: spec.resources.workers: expected an integer >= 1, got \"0\"");
  // A missing field is reported at the line of the mapping that lacks it.
  EXPECT_EQ(
      ErrorOf([] { ParseJob(Edited(kBase, "      name: sgd\n", "", "line"), "job.yaml", ""); }),
      "job.yaml:13: spec.training.optimizer.name: required field is missing");
}

TEST(JobRulesTest, InvalidYamlNamesLineAndColumn) {
  const std::string message = ErrorOf(
      [] { ParseJob(Edited(kBase, "    workers: 2", "    workers: [2", "yaml"), "j.yaml", ""); });
  EXPECT_EQ(message.rfind("j.yaml:", 0), 0U) << message;
  EXPECT_NE(message.find("invalid YAML"), std::string::npos) << message;
}

// What the rules allow, next to what they reject.
TEST(JobRulesTest, AcceptedSpellings) {
  // YAML 1.1 booleans; quoted numbers are numbers.
  JobSpec job = ParseJob(Edited(kBase, "    batchSizePerReplica: 16",
                                "    batchSizePerReplica: \"16\"\n    shuffle: off", "ok"),
                         "job.yaml", "");
  EXPECT_EQ(job.data.batch_size_per_replica, 16);
  EXPECT_FALSE(job.data.shuffle);
  // Optimizer names and enum option values match case-insensitively; option keys may be camelCase,
  // snake_case or kebab-case.
  job = ParseJob(Edited(kBase, kOptimizer,
                        "    optimizer: {name: AdamW, weight-decay: 0.1, amsgrad: yes}\n", "ok"),
                 "job.yaml", "");
  EXPECT_EQ(job.training.optimizer.name, "adamw");
  EXPECT_DOUBLE_EQ(job.training.optimizer.weight_decay, 0.1);
  EXPECT_TRUE(job.training.optimizer.amsgrad);
  job = ParseJob(Edited(kBase, "    builder: PS\n",
                        "    builder: AllReduce\n    options: {compressor: horovodcompressoref, "
                        "all_reduce_spec: auto}\n",
                        "ok"),
                 "job.yaml", "");
  EXPECT_EQ(job.strategy.options.at("compressor"), "horovodcompressoref");
  // A cosine schedule's kind is case-insensitive too, and spans `steps` when totalSteps is absent.
  job = ParseJob(Edited(kBase, Training(""), Training("    lrSchedule: {kind: Cosine}\n"), "ok"),
                 "job.yaml", "");
  EXPECT_EQ(job.training.lr_schedule.kind, "cosine");
  EXPECT_EQ(job.training.lr_schedule.total_steps, 1000);
  // Annotation values are free text; an empty label value is allowed.
  job = ParseJob(
      Edited(kBase, Metadata(""),
             Metadata("  labels: {team: \"\"}\n  annotations: {note: \"any text: ok\"}\n"), "ok"),
      "job.yaml", "");
  EXPECT_EQ(job.metadata.labels.at("team"), "");
  EXPECT_EQ(job.metadata.annotations.at("note"), "any text: ok");
  // Quantities in every form the API server takes.
  for (const char* quantity : {"500m", "2", "1.5", ".5", "1e3", "+1", "128Mi", "1G", "1E-3"}) {
    job = ParseJob(Edited(kBase, Resources(""),
                          Resources(std::string("    cpu: \"") + quantity +
                                    "\"\n    memory: " + quantity + "\n"),
                          quantity),
                   "job.yaml", "");
    EXPECT_EQ(job.resources.cpu, quantity);
  }
}

TEST(JobRulesTest, AliasesWithoutACycleAreExpandedInTheTemplate) {
  const JobSpec job =
      ParseJob(Edited(kBase, Resources(""),
                      Resources("  template:\n    metadata: {labels: &l {pool: cpu}}\n"
                                "    spec: {nodeSelector: *l}\n"),
                      "alias"),
               "job.yaml", "");
  EXPECT_EQ(job.pod_template.find('*'), std::string::npos) << job.pod_template;
  EXPECT_EQ(job.pod_template.find('&'), std::string::npos) << job.pod_template;
  EXPECT_NE(job.pod_template.find("nodeSelector:\n    pool: cpu"), std::string::npos)
      << job.pod_template;
}

TEST(JobRulesTest, ParameterServerCountsThatAreAllowed) {
  // Dedicated parameter servers with a PS-family builder, with Parallax (its sparse variables go
  // to them) and with Auto (decided at compile time); replicasPerWorker 1 with GPUs.
  for (const char* builder :
       {"PS", "PSLoadBalancing", "PartitionedPS", "UnevenPartitionedPS", "Parallax", "Auto"}) {
    const JobSpec job = ParseJob(
        Edited(kBase, "    builder: PS\n", std::string("    builder: ") + builder + "\n", builder) +
            "    parameterServers: 3\n    gpusPerWorker: 4\n    replicasPerWorker: 1\n",
        "job.yaml", "");
    EXPECT_EQ(job.resources.parameter_servers, 3) << builder;
    EXPECT_EQ(TotalReplicas(job), 8) << builder;
  }
  // Colocation with Auto is kept: it applies if Auto picks a parameter-server builder.
  const JobSpec job = ParseJob(
      Edited(kBase, "    builder: PS\n", "    builder: Auto\n    colocation: [[a, b]]\n", "auto"),
      "job.yaml", "");
  EXPECT_EQ(job.strategy.colocation, (strategy::ColocationGroups{{"a", "b"}}));
}

TEST(JobRulesTest, TotalReplicasAndGlobalBatch) {
  // CPU: workers x replicasPerWorker; GPU: workers x gpusPerWorker.
  JobSpec job = ParseJob(
      Edited(kBase, Resources(""), Resources("    replicasPerWorker: 3\n"), "cpu"), "job.yaml", "");
  EXPECT_EQ(TotalReplicas(job), 6);
  EXPECT_EQ(TotalReplicas(job) * job.data.batch_size_per_replica, 96);
  job = ParseJob(Edited(kBase, Resources(""), Resources("    gpusPerWorker: 4\n"), "gpu"),
                 "job.yaml", "");
  EXPECT_EQ(TotalReplicas(job), 8);
}

// The examples of docs/job-reference.md are valid manifests and mean what the page says.
TEST(JobRulesTest, ReferenceExamplesParse) {
  const std::string page =
      testing::ReadText(std::string(AUTODIST_SOURCE_DIR) + "/docs/job-reference.md");
  std::vector<JobSpec> examples;
  for (size_t at = page.find("```yaml\n"); at != std::string::npos;
       at = page.find("```yaml\n", at + 1)) {
    const size_t start = at + 8;
    const size_t end = page.find("```", start);
    ASSERT_NE(end, std::string::npos);
    examples.push_back(ParseJob(page.substr(start, end - start), "job-reference.md", "/jobs"));
  }
  ASSERT_EQ(examples.size(), 2U);
  EXPECT_EQ(examples[0].metadata.name, "minimal");
  EXPECT_EQ(TotalReplicas(examples[0]), 1);
  const JobSpec& full = examples[1];
  EXPECT_EQ(full.model.path, "/jobs/models/mlp.onnx");
  EXPECT_EQ(TotalReplicas(full), 6);
  EXPECT_EQ(TotalReplicas(full) * full.data.batch_size_per_replica, 192);
  EXPECT_EQ(full.training.lr_schedule.total_steps, 2000);
  EXPECT_EQ(full.training.optimizer_options.at("betas"), "0.8,0.99");
  EXPECT_EQ(full.resources.parameter_servers, 2);
  EXPECT_EQ(full.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
}

TEST(JobRulesTest, BadFixtureFilesNameFileLineAndPath) {
  const std::string bad = kJobFixtures + "/bad";
  EXPECT_EQ(ErrorOf([&] { LoadJobFile(bad + "/allreduce-with-ps.yaml"); }),
            bad +
                "/allreduce-with-ps.yaml:23: spec.resources.parameterServers: builder AllReduce "
                "all-reduces every variable, so no variable would live on the 2 parameter "
                "server(s); set parameterServers to 0 or use a PS-family builder (PS, "
                "PSLoadBalancing, PartitionedPS, UnevenPartitionedPS, Parallax)");
}

}  // namespace
}  // namespace autodist::job
