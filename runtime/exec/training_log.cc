#include "runtime/exec/training_log.h"

#include <vector>

#include "runtime/observe/event_file.h"

namespace autodist::exec {

TrainingLog::TrainingLog(const std::string& tensorboard_dir, bool chief) : chief_(chief) {
  if (!tensorboard_dir.empty()) {
    events_ = std::make_unique<observe::EventFileWriter>(tensorboard_dir);
  }
}

TrainingLog::~TrainingLog() = default;

void TrainingLog::Step(const LoggedStep& step) {
  if (!events_) return;
  std::vector<observe::Scalar> scalars = {
      {"perf/samples_per_second", step.samples_per_second},
      {"perf/step_seconds", step.step_seconds},
      {"perf/data_wait_seconds", step.data_wait_seconds},
      {"perf/compute_seconds", step.compute_seconds},
      {"perf/synchronize_seconds", step.synchronize_seconds},
  };
  if (chief_) {
    scalars.push_back({"train/loss", step.loss});
    scalars.push_back({"train/learning_rate", step.learning_rate});
    const WireTotals& wire = step.wire;
    if (wire.parameter_server_bytes) {
      scalars.push_back({"wire/parameter_server_bytes", double(*wire.parameter_server_bytes)});
    }
    if (wire.parameter_server_compression_ratio) {
      scalars.push_back(
          {"wire/parameter_server_compression_ratio", *wire.parameter_server_compression_ratio});
    }
    if (wire.all_reduce_bytes) {
      scalars.push_back({"wire/all_reduce_bytes", double(*wire.all_reduce_bytes)});
    }
    if (wire.all_reduce_compression_ratio) {
      scalars.push_back({"wire/compression_ratio", *wire.all_reduce_compression_ratio});
    }
  }
  events_->WriteScalars(step.step, scalars);
}

void TrainingLog::Evaluation(int64_t step, double loss, std::optional<double> accuracy) {
  if (!events_ || !chief_) return;
  std::vector<observe::Scalar> scalars = {{"eval/loss", loss}};
  if (accuracy) scalars.push_back({"eval/accuracy", *accuracy});
  events_->WriteScalars(step, scalars);
}

}  // namespace autodist::exec
