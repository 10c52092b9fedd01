#include "runtime/exec/trainer.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <set>
#include <sstream>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/data/dataset.h"
#include "runtime/data/loader.h"
#include "runtime/exec/export.h"
#include "runtime/exec/finite_check.h"
#include "runtime/exec/host_staged_synchronizer.h"
#include "runtime/exec/local_synchronizer.h"
#include "runtime/exec/session.h"
#include "runtime/exec/training_log.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/observe/timeline.h"

namespace autodist::exec {
namespace {

using Clock = std::chrono::steady_clock;
using checkpoint::CheckpointContents;
using checkpoint::CheckpointReader;
using checkpoint::ListCheckpoints;
using checkpoint::WriteCheckpoint;

onnx::ModelProto ReadModel(const std::string& path) {
  onnx::ModelProto model;
  AD_CHECK(model.ParseFromString(ReadFileBytes(path, "model")), kInvalidArgument,
           "'{}' is not an ONNX model", path);
  return model;
}

std::shared_ptr<const data::Dataset> LoadDataset(
    const std::vector<std::pair<std::string, std::string>>& files) {
  return std::make_shared<const data::Dataset>(data::Dataset::FromFiles(files));
}

// Declared shape of one row of every graph input (the batch dimension dropped).
std::map<std::string, std::vector<int64_t>> RowShapes(const Session& session) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const InputSpec& spec : session.inputs()) {
    if (spec.shape.empty()) continue;
    shapes[spec.name] = std::vector<int64_t>(spec.shape.begin() + 1, spec.shape.end());
  }
  return shapes;
}

// `device_check` (for gradients on a device) answers the common case, every gradient finite,
// with one wait for the device; the host loop names the variable when one is not.
void CheckFinite(int64_t step, double loss, const Session& session,
                 const std::map<std::string, Gradient>& gradients,
                 DeviceFiniteCheck* device_check) {
  if (device_check != nullptr) {
    for (const auto& [name, gradient] : gradients) device_check->Add(gradient);
    if (device_check->TakeAllFinite() && std::isfinite(loss)) return;
  }
  std::string first_bad;
  for (const std::string& name : session.trainable_names()) {
    const auto it = gradients.find(name);
    if (it == gradients.end()) continue;
    if (!GradientFiniteOnHost(it->second)) {
      first_bad = name;
      break;
    }
  }
  if (std::isfinite(loss) && first_bad.empty()) return;
  FailDiverged(step,
               fmt::format("loss is {}; {}", loss,
                           first_bad.empty() ? std::string("every gradient is finite")
                                             : fmt::format("the first variable whose gradient is "
                                                           "not finite is '{}'",
                                                           first_bad)));
}

// Top-1 accuracy counts of `logits` [B, C] against int64 `labels` [B].
int64_t CorrectPredictions(const tensor::Tensor& on_device, const tensor::Tensor& labels) {
  const tensor::Tensor logits = on_device.To(tensor::Device::Cpu());
  const int64_t rows = logits.dim(0);
  const int64_t classes = logits.numel() / std::max<int64_t>(rows, 1);
  const auto* scores = logits.data<float>();
  const auto* truth = labels.data<int64_t>();
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = scores + r * classes;
    const int64_t best = std::max_element(row, row + classes) - row;
    correct += best == truth[r] ? 1 : 0;
  }
  return correct;
}

void CheckReplicasFit(const TrainerOptions& options) {
  AD_CHECK(options.replica_devices.empty() ||
               options.replica_devices.size() == static_cast<size_t>(options.local_replicas),
           kInvalidArgument, "{} replica devices for {} local replicas",
           options.replica_devices.size(), options.local_replicas);
}

// One replica: its session and its shard of the training data.
struct Replica {
  std::unique_ptr<Session> session;
  std::unique_ptr<data::Loader> loader;
};

class Run {
 public:
  // `model` is options.model's contents.
  Run(const TrainerOptions& options, StepSynchronizer& synchronizer, LineSink sink,
      onnx::ModelProto model)
      : options_(options),
        synchronizer_(synchronizer),
        sink_(std::move(sink)),
        model_(std::move(model)),
        schedule_(options.optimizer.lr, options.schedule),
        log_(options.tensorboard_dir, synchronizer.is_chief()) {
    AD_CHECK((options.epochs > 0) != (options.steps > 0), kInvalidArgument,
             "give exactly one of epochs ({}) and steps ({}) as a positive number", options.epochs,
             options.steps);
    AD_CHECK(!options.train_files.empty(), kInvalidArgument, "no training data given");
    CheckReplicasFit(options);
    AD_CHECK(options.local_replicas >= 1 && options.rank >= 0 &&
                 options.rank + options.local_replicas <= options.world_size,
             kInvalidArgument, "replicas {}..{} do not fit in a world of {} replicas", options.rank,
             options.rank + options.local_replicas - 1, options.world_size);
    for (int r = 0; r < options.local_replicas; ++r) {
      // Each replica has its own random stream (Dropout); replica 0 of a single process keeps
      // the run's seed, so single-process runs do not depend on this loop being distributed.
      SessionOptions session_options{options.loss,
                                     options.seed + static_cast<uint64_t>(options.rank + r),
                                     ReplicaDevice(options, r), options.precision};
      replicas_.push_back(
          Replica{std::make_unique<Session>(model_, options.model, session_options), nullptr});
      sessions_.push_back(replicas_.back().session.get());
    }
    train_ = LoadDataset(options.train_files);
    if (!options.eval_files.empty() && synchronizer_.is_chief()) {
      eval_ = LoadDataset(options.eval_files);
    }
    for (int r = 0; r < options.local_replicas; ++r) {
      const tensor::Device device = ReplicaDevice(options, r);
      finite_checks_.push_back(device.is_cpu() ? nullptr
                                               : std::make_unique<DeviceFiniteCheck>(device));
    }
    row_shapes_ = RowShapes(session());
    bool has_labels = false;
    for (const InputSpec& spec : session().inputs()) has_labels |= spec.name == options.labels;
    const auto& outputs = session().output_names();
    accuracy_ =
        has_labels && std::find(outputs.begin(), outputs.end(), options.logits) != outputs.end();
  }

  TrainResult Train() {
    TrainResult result;
    ResumePoint start;
    std::map<std::string, Tensor> optimizer_state;
    if (options_.resume && synchronizer_.is_chief()) start = Restore(result, optimizer_state);
    start = synchronizer_.Start(sessions_, start, optimizer_state);
    step_ = start.step;
    for (size_t r = 0; r < replicas_.size(); ++r) {
      data::LoaderOptions loader_options;
      loader_options.batch_size = options_.batch_size;
      loader_options.shuffle = options_.shuffle;
      loader_options.seed = options_.seed;
      loader_options.rank = options_.rank + static_cast<int>(r);
      loader_options.world_size = options_.world_size;
      // Batches copied to the replica's device ahead of their step.
      loader_options.device = ReplicaDevice(options_, static_cast<int>(r));
      replicas_[r].loader = std::make_unique<data::Loader>(
          train_, loader_options, row_shapes_, data::Position{start.epoch, start.batch});
    }
    const data::Loader& loader = *replicas_[0].loader;
    const int64_t total =
        options_.steps > 0 ? options_.steps : options_.epochs * loader.batches_per_epoch();
    AD_CHECK(step_ <= total, kInvalidArgument,
             "the checkpoint is at step {}, past the {} steps of this run", step_, total);

    const auto run_start = Clock::now();
    auto window_start = run_start;
    int64_t window_samples = 0;
    int64_t window_steps = 0;
    // Seconds of the window's steps spent waiting for data, computing and synchronizing.
    double window_data = 0;
    double window_compute = 0;
    double window_sync = 0;
    const auto since = [](Clock::time_point from) {
      return std::chrono::duration<double>(Clock::now() - from).count();
    };
    int64_t run_samples = 0;
    double loss = 0;
    std::vector<std::map<std::string, Gradient>> gradients(replicas_.size());
    if (observe::Timeline* timeline = observe::ActiveTimeline()) timeline->NameThread("training");
    observe::RuntimeMetrics& metrics = observe::ProcessMetrics();
    while (step_ < total) {
      const auto step_start = Clock::now();
      const observe::Span step_span("step", [&] {
        return observe::SpanText{fmt::format("step {}", step_ + 1),
                                 fmt::format(R"("step":{})", step_ + 1)};
      });
      const double lr = schedule_.LearningRate(step_);
      double loss_sum = 0;
      int64_t epoch = 0;
      for (size_t r = 0; r < replicas_.size(); ++r) {
        const auto data_start = Clock::now();
        data::Batch batch = [&] {
          const observe::Span span("data", "data wait");
          return replicas_[r].loader->Next();
        }();
        const auto compute_start = Clock::now();
        window_data += std::chrono::duration<double>(compute_start - data_start).count();
        GradientReadyFn on_ready;
        if (r + 1 == replicas_.size() && synchronizer_.overlaps_backward()) {
          on_ready = [&, r](const std::string& name, const Gradient& gradient) {
            // Checked before it leaves this worker: a gradient that is not finite fails this
            // worker here, instead of reaching every worker's weights through the all-reduce
            // (and failing them all a step later, whichever of them is named).
            // On a device the check stays there (one scalar read, not the whole gradient), or
            // is the synchronizer's, on its own threads, so that backward does not wait for it.
            DeviceFiniteCheck* device_check = finite_checks_[r].get();
            bool finite = true;
            if (!synchronizer_.checks_ready_gradients()) {
              if (device_check != nullptr) {
                device_check->Add(gradient);
                finite = device_check->TakeAllFinite();
              } else {
                finite = GradientFiniteOnHost(gradient);
              }
            }
            if (!finite) {
              FailDiverged(step_ + 1, fmt::format("the gradient of '{}' is not finite", name));
            }
            synchronizer_.GradientReady(step_, static_cast<int>(r), name, gradient, gradients);
          };
        }
        Session::StepResult step = replicas_[r].session->ForwardBackward(batch.feeds, on_ready);
        window_compute += since(compute_start);
        // Gradients handed out as they were ready were checked then.
        static const std::map<std::string, Gradient> kChecked;
        CheckFinite(step_ + 1, step.loss, *replicas_[r].session,
                    on_ready ? kChecked : step.gradients, finite_checks_[r].get());
        gradients[r] = std::move(step.gradients);
        loss_sum += step.loss;
        metrics.samples.Inc(static_cast<double>(batch.rows));
        window_samples += batch.rows;
        run_samples += batch.rows;
        epoch = batch.position.epoch;
      }
      {
        const observe::Span span("sync", "synchronize");
        const auto sync_start = Clock::now();
        synchronizer_.Synchronize(step_, lr, gradients, sessions_);
        window_sync += since(sync_start);
      }
      ++step_;
      ++window_steps;
      loss = loss_sum / static_cast<double>(replicas_.size());
      metrics.steps.Inc();
      metrics.step_duration.Observe(since(step_start));
      metrics.loss.Set(loss);
      metrics.learning_rate.Set(lr);
      const bool epoch_end = options_.epochs > 0 && step_ % loader.batches_per_epoch() == 0;
      if (step_ % std::max<int64_t>(options_.log_every, 1) == 0 || step_ == total) {
        const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
        const double rate = static_cast<double>(window_samples) / std::max(seconds, 1e-9);
        // What follows (the report, the servers' statistics for TensorBoard) counts in the next
        // window: it is time the training spent.
        window_start = Clock::now();
        Emit(fmt::format("step {}/{}  epoch {}  loss {:.4f}  lr {:.3g}  samples/s {:.0f}", step_,
                         total, epoch + 1, loss, lr, rate));
        synchronizer_.ReportProgress(step_, total, loss, rate);
        if (log_.enabled()) {
          const auto per_step = static_cast<double>(std::max<int64_t>(window_steps, 1));
          log_.Step(LoggedStep{step_, loss, lr, rate, seconds / per_step, window_data / per_step,
                               window_compute / per_step, window_sync / per_step,
                               synchronizer_.is_chief() ? synchronizer_.Wire() : WireTotals{}});
        }
        window_samples = 0;
        window_steps = 0;
        window_data = 0;
        window_compute = 0;
        window_sync = 0;
      }
      const bool eval_now = options_.eval_every > 0 ? step_ % options_.eval_every == 0 : epoch_end;
      if (!options_.eval_files.empty() && eval_now && step_ != total) result.eval = Evaluate();
      if (!options_.checkpoint_dir.empty() && options_.checkpoint_every > 0 &&
          step_ % options_.checkpoint_every == 0 && step_ != total) {
        Save(loader.position());
      }
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
    result.steps = step_;
    result.last_loss = loss;
    result.samples_per_second = static_cast<double>(run_samples) / std::max(result.seconds, 1e-9);
    if (!options_.eval_files.empty()) result.eval = Evaluate();
    if (!options_.checkpoint_dir.empty()) Save(loader.position());
    if (!options_.export_path.empty()) Export();
    return result;
  }

 private:
  Session& session() { return *replicas_[0].session; }

  void Emit(const std::string& line) {
    if (sink_) {
      sink_(line);
    } else {
      std::cout << line << std::endl;
    }
  }

  // Replica-local state reduced over every replica of the job (a collective: every process
  // calls it at the same steps).
  std::map<std::string, Tensor> ReducedStates(const std::string& purpose) {
    if (session().state_names().empty()) return {};
    return synchronizer_.ReduceStates(fmt::format("{}-{}", purpose, step_), sessions_);
  }

  // Evaluates with the reduced replica-local state (the state an export would carry); replica
  // 0's own state is put back afterwards, so training continues unchanged.
  std::optional<EvalResult> Evaluate() {
    const observe::Span span("eval", "evaluate");
    std::map<std::string, Tensor> states = ReducedStates("eval");
    if (!synchronizer_.is_chief()) return std::nullopt;
    std::map<std::string, Tensor> own;
    for (auto& [name, value] : states) {
      own[name] = session().state(name);
      session().state(name) = value;
    }
    EvalResult result = EvaluateOnSession();
    for (auto& [name, value] : own) session().state(name) = value;
    return result;
  }

  EvalResult EvaluateOnSession() {
    EvalResult result;
    const bool accuracy = accuracy_;
    std::vector<std::string> fetch = {session().loss_name()};
    if (accuracy) fetch.push_back(options_.logits);
    double loss_sum = 0;
    int64_t correct = 0;
    std::vector<int64_t> rows;
    for (int64_t begin = 0; begin < eval_->size(); begin += options_.eval_batch_size) {
      const int64_t end = std::min(eval_->size(), begin + options_.eval_batch_size);
      rows.clear();
      for (int64_t r = begin; r < end; ++r) rows.push_back(r);
      const auto feeds = eval_->Batch(rows, row_shapes_);
      const auto outputs = session().Run(feeds, false, fetch);
      // The loss is a mean over the batch: weight it by the batch's rows.
      loss_sum += outputs.at(session().loss_name()).To(tensor::Device::Cpu()).GetAsDouble(0) *
                  static_cast<double>(end - begin);
      if (accuracy)
        correct += CorrectPredictions(outputs.at(options_.logits), feeds.at(options_.labels));
      result.samples += end - begin;
    }
    result.loss = loss_sum / static_cast<double>(std::max<int64_t>(result.samples, 1));
    if (accuracy)
      result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
    Emit(fmt::format("eval after step {}: loss {:.4f}{}", step_, result.loss,
                     result.accuracy ? fmt::format("  accuracy {:.4f}", *result.accuracy) : ""));
    log_.Evaluation(step_, result.loss, result.accuracy);
    return result;
  }

  void Save(const data::Position& position) {
    const observe::Span span("checkpoint", "checkpoint");
    std::map<std::string, Tensor> states = ReducedStates("checkpoint");
    if (!synchronizer_.is_chief()) return;
    const std::string path = checkpoint::CheckpointPath(options_.checkpoint_dir, step_);
    checkpoint::CreateCheckpointDirectory(options_.checkpoint_dir);  // for the servers' shards
    CheckpointState state = synchronizer_.StateForCheckpoint(sessions_, path);
    if (!state.warning.empty()) Emit("warning: " + state.warning);
    CheckpointContents contents;
    contents.meta.step = step_;
    contents.meta.epoch = position.epoch;
    contents.meta.batch = position.batch;
    contents.meta.model = options_.model;
    std::ostringstream rng;
    rng << session().rng();
    contents.meta.rng_state = rng.str();
    for (const std::string& name : session().trainable_names()) {
      const auto it = state.in_memory.variables.find(name);
      if (it != state.in_memory.variables.end()) contents.variables.emplace_back(name, it->second);
    }
    contents.pieced_variables = std::move(state.pieced_variables);
    contents.pieced_optimizer = std::move(state.pieced_optimizer);
    for (const std::string& name : session().state_names()) {
      contents.states.emplace_back(name, states.at(name).To(tensor::Device::Cpu()));
    }
    for (const auto& [key, value] : state.in_memory.optimizer) {
      contents.optimizer.emplace_back(key, value);
    }
    WriteCheckpoint(options_.checkpoint_dir, contents, options_.checkpoint_keep);
    Emit(fmt::format("checkpoint at step {}: {}", step_, path));
  }

  void Export() {
    std::map<std::string, Tensor> values = ReducedStates("export");
    if (!synchronizer_.is_chief()) return;
    TrainingState state = synchronizer_.CurrentState(sessions_);
    for (auto& [name, value] : values) value = value.To(tensor::Device::Cpu());
    values.merge(state.variables);
    ExportModel(model_, options_.model, values, options_.export_path, options_.export_options);
    Emit(fmt::format("exported the trained model to {}", options_.export_path));
  }

  ResumePoint Restore(TrainResult& result, std::map<std::string, Tensor>& optimizer_state) {
    AD_CHECK(!options_.checkpoint_dir.empty(), kInvalidArgument,
             "resuming needs a checkpoint directory");
    const std::vector<std::string> paths = ListCheckpoints(options_.checkpoint_dir);
    if (paths.empty()) {
      Emit(fmt::format("no checkpoint in {}; starting from step 0", options_.checkpoint_dir));
      return {};
    }
    // A checkpoint that is torn (a crash while it was written, on a file system that does not
    // order the rename after the data) or corrupt is passed over for the one before it. One
    // that does not fit the model is the user's error, and fails.
    for (size_t i = 0; i < paths.size(); ++i) {
      std::optional<CheckpointReader> reader;
      try {
        reader.emplace(paths[i]);
      } catch (const Error& error) {
        if (i + 1 == paths.size()) throw;
        Emit(fmt::format("warning: {}; trying the checkpoint before it", error.what()));
        continue;
      }
      CheckFitsTheModel(*reader);
      try {
        return RestoreFrom(*reader, result, optimizer_state);
      } catch (const Error& error) {
        if (i + 1 == paths.size()) throw;
        Emit(fmt::format("warning: {}; trying the checkpoint before it", error.what()));
      }
    }
    Fail(ErrorCode::kInternal, "no checkpoint restored from {}", options_.checkpoint_dir);
  }

  // Every tensor of the checkpoint names a variable or state of the model, with its shape.
  void CheckFitsTheModel(const CheckpointReader& reader) {
    const auto check = [&](const CheckpointReader::Entry& entry, const Tensor& target) {
      AD_CHECK(entry.shape == target.shape() && entry.dtype == target.dtype(), kInvalidArgument,
               "checkpoint '{}': '{}' is {} {}, the model's is {} {}", reader.path(), entry.name,
               tensor::DTypeName(entry.dtype), tensor::ShapeToString(entry.shape),
               tensor::DTypeName(target.dtype()), tensor::ShapeToString(target.shape()));
    };
    const auto names = [](const std::vector<std::string>& list) {
      return std::set<std::string>(list.begin(), list.end());
    };
    const std::set<std::string> variables = names(session().trainable_names());
    const std::set<std::string> states = names(session().state_names());
    for (const auto& entry : reader.variables()) {
      AD_CHECK(variables.contains(entry.name), kInvalidArgument,
               "checkpoint '{}' holds variable '{}', which model '{}' does not have (a checkpoint "
               "of another model?)",
               reader.path(), entry.name, options_.model);
      check(entry, session().variable(entry.name));
    }
    for (const auto& entry : reader.states()) {
      AD_CHECK(states.contains(entry.name), kInvalidArgument,
               "checkpoint '{}' holds state '{}', which model '{}' does not have", reader.path(),
               entry.name, options_.model);
      check(entry, session().state(entry.name));
    }
  }

  ResumePoint RestoreFrom(const CheckpointReader& reader, TrainResult& result,
                          std::map<std::string, Tensor>& optimizer_state) {
    // Each tensor is read once, into new storage that replaces the session's (so at most one
    // tensor more than the model is in memory); every other replica takes a copy, as state is per
    // replica and the restored value is the best start for each.
    const auto restore = [&](const CheckpointReader::Entry& entry, auto&& target_of) {
      const Tensor restored = reader.Read(entry);
      Tensor& first = target_of(*sessions_.front());
      first = restored.To(first.device());
      for (size_t r = 1; r < sessions_.size(); ++r) {
        Tensor& target = target_of(*sessions_[r]);
        target = first.To(target.device());
        if (target.SharesStorageWith(first)) target = first.Clone();
      }
    };
    for (const auto& entry : reader.variables()) {
      restore(entry, [&](Session& s) -> Tensor& { return s.variable(entry.name); });
    }
    for (const auto& entry : reader.states()) {
      restore(entry, [&](Session& s) -> Tensor& { return s.state(entry.name); });
    }
    for (const auto& entry : reader.optimizer()) optimizer_state[entry.name] = reader.Read(entry);
    std::istringstream rng(reader.meta().rng_state);
    rng >> session().rng();
    AD_CHECK(!rng.fail(), kInvalidArgument, "checkpoint '{}': corrupt random engine state",
             reader.path());
    result.resumed_from_step = reader.meta().step;
    Emit(fmt::format("resumed from {} at step {}", reader.path(), reader.meta().step));
    return ResumePoint{reader.meta().step, reader.meta().epoch, reader.meta().batch};
  }

  const TrainerOptions& options_;
  StepSynchronizer& synchronizer_;
  LineSink sink_;
  onnx::ModelProto model_;
  std::vector<Replica> replicas_;
  std::vector<Session*> sessions_;
  optim::LrSchedule schedule_;
  TrainingLog log_;
  std::shared_ptr<const data::Dataset> train_;
  std::shared_ptr<const data::Dataset> eval_;
  std::map<std::string, std::vector<int64_t>> row_shapes_;
  // By replica: checks its gradients on its device (null on the CPU, where the host loop is the
  // check).
  std::vector<std::unique_ptr<DeviceFiniteCheck>> finite_checks_;
  bool accuracy_ = false;  // logits output and label input exist
  int64_t step_ = 0;
};

}  // namespace

void ApplyGradients(const std::map<std::string, Gradient>& gradients, Session& session,
                    optim::Optimizer& optimizer) {
  const observe::Span span("optimizer", "optimizer");
  // Dense updates go together (one fused launch on a GPU), in name order as before.
  std::vector<optim::DenseUpdate> dense;
  for (const auto& [name, gradient] : gradients) {
    Tensor& parameter = session.variable(name);
    if (gradient.is_sparse()) {
      optimizer.ApplySparse(name, parameter, *gradient.sparse);
    } else {
      dense.push_back(optim::DenseUpdate{&name, &parameter, &gradient.dense});
    }
  }
  optimizer.ApplyAll(dense);
}

TrainResult Train(const TrainerOptions& options, StepSynchronizer& synchronizer,
                  const LineSink& sink) {
  onnx::ModelProto model = ReadModel(options.model);
  if (options.device.is_cpu() || !synchronizer.works_on_host()) {
    Run run(options, synchronizer, sink, std::move(model));
    return run.Train();
  }
  CheckReplicasFit(options);  // before the mirrors are made
  HostStagedSynchronizer staged(synchronizer, model, options.model, options.loss,
                                options.local_replicas, options.device.kind);
  Run run(options, staged, sink, std::move(model));
  return run.Train();
}

tensor::Device ReplicaDevice(const TrainerOptions& options, int replica) {
  if (!options.replica_devices.empty()) {
    return options.replica_devices.at(static_cast<size_t>(replica));
  }
  if (options.device.is_cpu()) return options.device;
  return tensor::Device{options.device.kind, options.device.index + replica};
}

TrainResult Train(const TrainerOptions& options, const LineSink& sink) {
  CheckReplicasFit(options);  // before the optimizer takes the device
  // One GPU replica updates on its device; several (towers) are averaged and updated on the host
  // through the staging, the optimizer there.
  const bool towers = !options.device.is_cpu() && options.local_replicas > 1;
  LocalSynchronizer synchronizer(options.optimizer, options.sum_states,
                                 towers ? tensor::Device::Cpu() : options.device);
  return Train(options, synchronizer, sink);
}

}  // namespace autodist::exec
