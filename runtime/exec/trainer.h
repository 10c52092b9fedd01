// Single-process training: the loop every worker runs (later under a Strategy). Reads batches,
// runs forward + backward, applies the optimizer, logs progress, evaluates, checkpoints and
// resumes bit-identically, and exports the trained model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/exec/export_options.h"
#include "runtime/ops/precision.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/optimizer.h"

namespace autodist::exec {

struct TrainerOptions {
  std::string model;              // ONNX file
  std::string loss;               // loss output; empty: found by Session
  std::string logits = "logits";  // output compared with `labels` for accuracy (if both exist)
  std::string labels = "label";   // graph input holding class indices
  // graph input -> array file, for the training and the evaluation split.
  std::vector<std::pair<std::string, std::string>> train_files;
  std::vector<std::pair<std::string, std::string>> eval_files;
  int64_t batch_size = 64;
  int64_t eval_batch_size = 1000;
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t epochs = 0;  // exactly one of epochs and steps is > 0
  int64_t steps = 0;
  optim::OptimizerOptions optimizer;
  optim::ScheduleOptions schedule;
  int64_t log_every = 100;       // progress line every N steps (and at the end)
  int64_t eval_every = 0;        // evaluate every N steps; 0: at the end of each epoch
  std::string checkpoint_dir;    // empty: no checkpoints
  int64_t checkpoint_every = 0;  // steps; 0: only at the end when checkpoint_dir is set
  bool resume = false;           // continue from the latest checkpoint in checkpoint_dir
  int checkpoint_keep = 3;       // checkpoints kept (the newest); 0: all
  std::string export_path;       // write the trained model here at the end
  ExportOptions export_options;  // when its initializers go to a data file beside it
  // Data-parallel replicas: this process runs `local_replicas` of them, with global indices
  // rank .. rank + local_replicas - 1 of world_size; replica i reads data shard rank + i.
  int local_replicas = 1;
  int rank = 0;
  int world_size = 1;
  // Replica-local state reduced by sum (not mean) at checkpoints, evaluation and export.
  std::set<std::string> sum_states;
  // Where the replicas train: the CPU, or GPUs from this one on, a replica each (replica r on
  // cuda:device.index + r; the backend's tensor memory and optimizers must be installed, gpu/).
  // Several GPU replicas of one process are summed and updated on the host
  // (host_staged_synchronizer.h), as a worker's towers.
  tensor::Device device = tensor::Device::Cpu();
  // Where each replica trains instead, when given (local_replicas entries): tests put several on
  // one GPU.
  std::vector<tensor::Device> replica_devices;
  // Of matrix products and convolutions: fp32, or on a GPU tf32 (ops/precision.h).
  ops::Precision precision = ops::Precision::kFp32;
  // TensorBoard event files of this process go here (training_log.h); empty: none.
  std::string tensorboard_dir;
};

// The device of replica `replica` (of this process's) under `options`.
tensor::Device ReplicaDevice(const TrainerOptions& options, int replica);

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;  // when logits and labels exist
  int64_t samples = 0;
};

struct TrainResult {
  int64_t steps = 0;
  double last_loss = 0;
  double samples_per_second = 0;
  double seconds = 0;
  std::optional<EvalResult> eval;  // the last evaluation
  int64_t resumed_from_step = -1;  // -1: started fresh
};

class Session;
struct Gradient;
class StepSynchronizer;

// Applies one optimizer step to every variable of `session` that has a gradient (row-sparse
// gradients through ApplySparse).
void ApplyGradients(const std::map<std::string, Gradient>& gradients, Session& session,
                    optim::Optimizer& optimizer);

// Receives each progress or evaluation line (default: standard output).
using LineSink = std::function<void(const std::string&)>;

// Runs the whole training; throws autodist::Error on bad input or a non-finite loss/gradient
// (naming the step and the first variable whose gradient is not finite).
TrainResult Train(const TrainerOptions& options, const LineSink& sink = nullptr);

// The same loop with the step synchronized by `synchronizer` (the parameter servers of a
// Strategy). Only the chief evaluates, checkpoints and exports; every process takes part in the
// reductions of replica-local state those need.
TrainResult Train(const TrainerOptions& options, StepSynchronizer& synchronizer,
                  const LineSink& sink = nullptr);

}  // namespace autodist::exec
