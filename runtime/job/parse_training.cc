// spec.training: length, optimizer, learning-rate schedule, checkpoints, evaluation, export,
// precision, TensorBoard.
#include <algorithm>
#include <cctype>
#include <limits>

#include "runtime/job/parse_sections.h"

namespace autodist::job::detail {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxKeep = 1000000;  // checkpoints kept; an int

// "totalSteps", "total_steps" and "total-steps" name the same option.
std::string Squashed(const std::string& key) {
  std::string out;
  for (const char c : key) {
    if (c != '_' && c != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

const std::string* FindOption(const std::map<std::string, std::string>& options,
                              const std::string& squashed_key) {
  for (const auto& [key, value] : options) {
    if (Squashed(key) == squashed_key) return &value;
  }
  return nullptr;
}

void ReadOptimizer(ParseContext& context, const YAML::Node& node, const std::string& path,
                   TrainingSpec& training) {
  const MapReader map(context, node, path);
  const std::string name = ReadNonEmptyString(context, map.Require("name"), map.PathOf("name"));
  for (const MapReader::Entry& entry : map.entries()) {
    if (entry.key == "name") continue;
    training.optimizer_options[entry.key] = ReadScalarOrList(context, entry.value, entry.path);
  }
  training.optimizer = context.Prefixing(
      path, [&] { return optim::ParseOptimizerOptions(name, training.optimizer_options); });
}

void ReadSchedule(ParseContext& context, const YAML::Node& node, const std::string& path,
                  TrainingSpec& training) {
  const MapReader map(context, node, path);
  for (const MapReader::Entry& entry : map.entries()) {
    training.lr_schedule_options[entry.key] = ReadString(context, entry.value, entry.path);
  }
  std::map<std::string, std::string> options = training.lr_schedule_options;
  // A cosine schedule runs over the whole training unless told otherwise; with `steps` that length
  // is known here (with `epochs` it depends on the data set size, so totalSteps must be given).
  const std::string* kind = FindOption(options, "kind");
  std::string lowered_kind = kind == nullptr ? "" : *kind;
  std::transform(lowered_kind.begin(), lowered_kind.end(), lowered_kind.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lowered_kind == "cosine" && FindOption(options, "totalsteps") == nullptr &&
      training.steps > 0) {
    options["total_steps"] = std::to_string(training.steps);
  }
  training.lr_schedule =
      context.Prefixing(path, [&] { return optim::ParseScheduleOptions(options); });
}

CheckpointSpec ReadCheckpoint(ParseContext& context, const YAML::Node& node,
                              const std::string& path, const PathResolver& resolver) {
  const MapReader map(context, node, path, {"path", "intervalSteps", "resume", "keep"});
  CheckpointSpec checkpoint;
  checkpoint.path = ReadPath(context, map.Require("path"), map.PathOf("path"), resolver);
  checkpoint.interval_steps = map.Int("intervalSteps", 0, kMax).value_or(0);
  checkpoint.resume = map.Bool("resume").value_or(checkpoint.resume);
  checkpoint.keep = static_cast<int>(map.Int("keep", 0, kMaxKeep).value_or(checkpoint.keep));
  return checkpoint;
}

std::string ReadTensorBoardPath(ParseContext& context, const YAML::Node& node,
                                const std::string& path, const PathResolver& resolver) {
  const MapReader map(context, node, path, {"path"});
  return ReadPath(context, map.Require("path"), map.PathOf("path"), resolver);
}

std::string ReadTimelinePath(ParseContext& context, const YAML::Node& node,
                             const std::string& path, const PathResolver& resolver) {
  const MapReader map(context, node, path, {"path"});
  return ReadPath(context, map.Require("path"), map.PathOf("path"), resolver);
}

}  // namespace

TrainingSpec ReadTraining(ParseContext& context, const YAML::Node& node, const std::string& path,
                          const PathResolver& resolver) {
  const MapReader map(
      context, node, path,
      {"epochs", "steps", "optimizer", "lrSchedule", "checkpoint", "evalIntervalSteps",
       "logIntervalSteps", "exportPath", "exportExternalData", "precision", "tensorboard",
       "timeline"});
  TrainingSpec training;
  const auto epochs = map.Int("epochs", 1, kMax);
  const auto steps = map.Int("steps", 1, kMax);
  if (epochs.has_value() && steps.has_value()) {
    context.Fail(map.PathOf("steps"), "give either epochs or steps, not both");
  }
  if (!epochs.has_value() && !steps.has_value()) {
    context.Fail(path, "one of epochs or steps is required");
  }
  training.epochs = epochs.value_or(0);
  training.steps = steps.value_or(0);

  ReadOptimizer(context, map.Require("optimizer"), map.PathOf("optimizer"), training);
  if (const YAML::Node* schedule = map.Find("lrSchedule")) {
    ReadSchedule(context, *schedule, map.PathOf("lrSchedule"), training);
  }
  if (const YAML::Node* checkpoint = map.Find("checkpoint")) {
    training.checkpoint = ReadCheckpoint(context, *checkpoint, map.PathOf("checkpoint"), resolver);
  }
  training.eval_interval_steps = map.Int("evalIntervalSteps", 0, kMax).value_or(0);
  training.log_interval_steps =
      map.Int("logIntervalSteps", 1, kMax).value_or(training.log_interval_steps);
  if (const YAML::Node* export_path = map.Find("exportPath")) {
    training.export_path = ReadPath(context, *export_path, map.PathOf("exportPath"), resolver);
  }
  training.export_external_data =
      map.Bool("exportExternalData").value_or(training.export_external_data);
  if (const std::optional<std::string> name = map.String("precision")) {
    const std::optional<ops::Precision> precision = ops::FindPrecision(*name);
    if (!precision.has_value()) {
      context.Fail(map.PathOf("precision"), "{}", ops::UnknownPrecision(*name));
    }
    training.precision = *precision;
  }
  if (const YAML::Node* tensorboard = map.Find("tensorboard")) {
    training.tensorboard_path =
        ReadTensorBoardPath(context, *tensorboard, map.PathOf("tensorboard"), resolver);
  }
  if (const YAML::Node* timeline = map.Find("timeline")) {
    training.timeline_path = ReadTimelinePath(context, *timeline, map.PathOf("timeline"), resolver);
  }
  return training;
}

}  // namespace autodist::job::detail
