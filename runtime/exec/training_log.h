// What the trainer records of a run besides its progress lines: TensorBoard scalars, written to
// an event file (runtime/observe) when TrainerOptions::tensorboard_dir is set. The chief records
// the run (loss, learning rate, throughput, step time, network traffic, evaluations); every other
// worker its own throughput and step time, in a directory of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/exec/step_synchronizer.h"

namespace autodist::observe {
class EventFileWriter;
}

namespace autodist::exec {

struct LoggedStep {
  int64_t step = 0;  // steps taken
  double loss = 0;   // mean over this process's replicas
  double learning_rate = 0;
  double samples_per_second = 0;  // this process's, since the last logged step
  double step_seconds = 0;        // mean wall time of a step since the last logged step
  // Where that time went, means per step over the same window: waiting for batches, the graph's
  // forward and backward passes, and the synchronizer (pushes, pulls, all-reduce, optimizer).
  double data_wait_seconds = 0;
  double compute_seconds = 0;
  double synchronize_seconds = 0;
  WireTotals wire;
};

class TrainingLog {
 public:
  // No event file when `tensorboard_dir` is empty. Throws InvalidArgument naming the directory
  // when it cannot be created.
  TrainingLog(const std::string& tensorboard_dir, bool chief);
  ~TrainingLog();

  bool enabled() const { return events_ != nullptr; }
  void Step(const LoggedStep& step);
  // An evaluation after `step` steps (the chief's).
  void Evaluation(int64_t step, double loss, std::optional<double> accuracy);

 private:
  bool chief_;
  std::unique_ptr<observe::EventFileWriter> events_;
};

}  // namespace autodist::exec
