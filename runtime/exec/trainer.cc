#include "runtime/exec/trainer.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/data/dataset.h"
#include "runtime/data/loader.h"
#include "runtime/exec/checkpoint.h"
#include "runtime/exec/export.h"
#include "runtime/exec/session.h"

namespace autodist::exec {
namespace {

using Clock = std::chrono::steady_clock;

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

bool AllFinite(const tensor::Tensor& t) {
  const float* data = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(data[i])) return false;
  }
  return true;
}

void CheckFinite(int64_t step, double loss, const Session& session,
                 const std::map<std::string, Gradient>& gradients) {
  std::string first_bad;
  for (const std::string& name : session.trainable_names()) {
    const auto it = gradients.find(name);
    if (it == gradients.end()) continue;
    const bool finite =
        it->second.is_sparse() ? AllFinite(it->second.sparse->values) : AllFinite(it->second.dense);
    if (!finite) {
      first_bad = name;
      break;
    }
  }
  if (std::isfinite(loss) && first_bad.empty()) return;
  Fail(ErrorCode::kFailedPrecondition,
       "step {}: training diverged: loss is {}; {}; lower the learning rate or check the data",
       step, loss,
       first_bad.empty()
           ? std::string("every gradient is finite")
           : fmt::format("the first variable whose gradient is not finite is '{}'", first_bad));
}

// Top-1 accuracy counts of `logits` [B, C] against int64 `labels` [B].
int64_t CorrectPredictions(const tensor::Tensor& logits, const tensor::Tensor& labels) {
  const int64_t rows = logits.dim(0);
  const int64_t classes = logits.numel() / std::max<int64_t>(rows, 1);
  const float* scores = logits.data<float>();
  const int64_t* truth = labels.data<int64_t>();
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = scores + r * classes;
    const int64_t best = std::max_element(row, row + classes) - row;
    correct += best == truth[r] ? 1 : 0;
  }
  return correct;
}

class Run {
 public:
  Run(const TrainerOptions& options, LineSink sink)
      : options_(options),
        sink_(std::move(sink)),
        model_(ReadModel(options.model)),
        session_(model_, options.model, SessionOptions{options.loss, options.seed}),
        optimizer_(optim::MakeOptimizer(options.optimizer)),
        schedule_(options.optimizer.lr, options.schedule) {
    AD_CHECK((options.epochs > 0) != (options.steps > 0), kInvalidArgument,
             "give exactly one of epochs ({}) and steps ({}) as a positive number", options.epochs,
             options.steps);
    AD_CHECK(!options.train_files.empty(), kInvalidArgument, "no training data given");
    train_ = LoadDataset(options.train_files);
    if (!options.eval_files.empty()) eval_ = LoadDataset(options.eval_files);
    row_shapes_ = RowShapes(session_);
    bool has_labels = false;
    for (const InputSpec& spec : session_.inputs()) has_labels |= spec.name == options.labels;
    const auto& outputs = session_.output_names();
    accuracy_ =
        has_labels && std::find(outputs.begin(), outputs.end(), options.logits) != outputs.end();
  }

  TrainResult Train() {
    TrainResult result;
    data::Position start;
    if (options_.resume) start = Restore(result);
    data::LoaderOptions loader_options;
    loader_options.batch_size = options_.batch_size;
    loader_options.shuffle = options_.shuffle;
    loader_options.seed = options_.seed;
    loader_options.rank = options_.rank;
    loader_options.world_size = options_.world_size;
    data::Loader loader(train_, loader_options, row_shapes_, start);
    const int64_t total =
        options_.steps > 0 ? options_.steps : options_.epochs * loader.batches_per_epoch();
    AD_CHECK(step_ <= total, kInvalidArgument,
             "the checkpoint is at step {}, past the {} steps of this run", step_, total);

    const auto run_start = Clock::now();
    auto window_start = run_start;
    int64_t window_samples = 0;
    int64_t run_samples = 0;
    double loss = 0;
    while (step_ < total) {
      const double lr = schedule_.LearningRate(step_);
      optimizer_->set_learning_rate(lr);
      data::Batch batch = loader.Next();
      Session::StepResult step = session_.ForwardBackward(batch.feeds);
      CheckFinite(step_ + 1, step.loss, session_, step.gradients);
      ApplyGradients(step.gradients, session_, *optimizer_);
      ++step_;
      loss = step.loss;
      window_samples += batch.rows;
      run_samples += batch.rows;
      const bool epoch_end = options_.epochs > 0 && step_ % loader.batches_per_epoch() == 0;
      if (step_ % std::max<int64_t>(options_.log_every, 1) == 0 || step_ == total) {
        const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
        Emit(fmt::format("step {}/{}  epoch {}  loss {:.4f}  lr {:.3g}  samples/s {:.0f}", step_,
                         total, batch.position.epoch + 1, loss, lr,
                         static_cast<double>(window_samples) / std::max(seconds, 1e-9)));
        window_start = Clock::now();
        window_samples = 0;
      }
      const bool eval_now = options_.eval_every > 0 ? step_ % options_.eval_every == 0 : epoch_end;
      if (eval_ && eval_now && step_ != total) result.eval = Evaluate();
      if (!options_.checkpoint_dir.empty() && options_.checkpoint_every > 0 &&
          step_ % options_.checkpoint_every == 0 && step_ != total) {
        Save(loader.position());
      }
    }
    result.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
    result.steps = step_;
    result.last_loss = loss;
    result.samples_per_second = static_cast<double>(run_samples) / std::max(result.seconds, 1e-9);
    if (eval_) result.eval = Evaluate();
    if (!options_.checkpoint_dir.empty()) Save(loader.position());
    if (!options_.export_path.empty()) {
      ExportModel(model_, session_, options_.export_path);
      Emit(fmt::format("exported the trained model to {}", options_.export_path));
    }
    return result;
  }

 private:
  void Emit(const std::string& line) {
    if (sink_) {
      sink_(line);
    } else {
      std::cout << line << std::endl;
    }
  }

  EvalResult Evaluate() {
    EvalResult result;
    const bool accuracy = accuracy_;
    std::vector<std::string> fetch = {session_.loss_name()};
    if (accuracy) fetch.push_back(options_.logits);
    double loss_sum = 0;
    int64_t correct = 0;
    std::vector<int64_t> rows;
    for (int64_t begin = 0; begin < eval_->size(); begin += options_.eval_batch_size) {
      const int64_t end = std::min(eval_->size(), begin + options_.eval_batch_size);
      rows.clear();
      for (int64_t r = begin; r < end; ++r) rows.push_back(r);
      const auto feeds = eval_->Batch(rows, row_shapes_);
      const auto outputs = session_.Run(feeds, false, fetch);
      // The loss is a mean over the batch: weight it by the batch's rows.
      loss_sum +=
          outputs.at(session_.loss_name()).GetAsDouble(0) * static_cast<double>(end - begin);
      if (accuracy)
        correct += CorrectPredictions(outputs.at(options_.logits), feeds.at(options_.labels));
      result.samples += end - begin;
    }
    result.loss = loss_sum / static_cast<double>(std::max<int64_t>(result.samples, 1));
    if (accuracy)
      result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
    Emit(fmt::format("eval after step {}: loss {:.4f}{}", step_, result.loss,
                     result.accuracy ? fmt::format("  accuracy {:.4f}", *result.accuracy) : ""));
    return result;
  }

  void Save(const data::Position& position) {
    autodist::proto::Checkpoint checkpoint;
    checkpoint.set_step(step_);
    checkpoint.set_epoch(position.epoch);
    checkpoint.set_batch(position.batch);
    checkpoint.set_model(options_.model);
    std::ostringstream rng;
    rng << session_.rng();
    checkpoint.set_rng_state(rng.str());
    for (const std::string& name : session_.trainable_names()) {
      *checkpoint.add_variables() = ToTensorValue(name, session_.variable(name));
    }
    for (const std::string& name : session_.state_names()) {
      *checkpoint.add_states() = ToTensorValue(name, session_.state(name));
    }
    for (const auto& [key, value] : optimizer_->SaveState()) {
      *checkpoint.add_optimizer() = ToTensorValue(key, value);
    }
    const std::string path = WriteCheckpoint(options_.checkpoint_dir, checkpoint);
    Emit(fmt::format("checkpoint at step {}: {}", step_, path));
  }

  data::Position Restore(TrainResult& result) {
    AD_CHECK(!options_.checkpoint_dir.empty(), kInvalidArgument,
             "resuming needs a checkpoint directory");
    const std::optional<std::string> path = LatestCheckpoint(options_.checkpoint_dir);
    if (!path) {
      Emit(fmt::format("no checkpoint in {}; starting from step 0", options_.checkpoint_dir));
      return {};
    }
    const autodist::proto::Checkpoint checkpoint = ReadCheckpoint(*path);
    const auto restore = [&](const autodist::proto::TensorValue& value, Tensor& target) {
      const Tensor restored = FromTensorValue(value, "checkpoint '" + *path + "'");
      AD_CHECK(restored.shape() == target.shape() && restored.dtype() == target.dtype(),
               kInvalidArgument, "checkpoint '{}': '{}' has shape {}, the model's has {}", *path,
               value.name(), tensor::ShapeToString(restored.shape()),
               tensor::ShapeToString(target.shape()));
      target = restored;
    };
    for (const auto& value : checkpoint.variables())
      restore(value, session_.variable(value.name()));
    for (const auto& value : checkpoint.states()) restore(value, session_.state(value.name()));
    std::map<std::string, Tensor> optimizer_state;
    for (const auto& value : checkpoint.optimizer()) {
      optimizer_state[value.name()] = FromTensorValue(value, "checkpoint '" + *path + "'");
    }
    optimizer_->LoadState(optimizer_state);
    std::istringstream rng(checkpoint.rng_state());
    rng >> session_.rng();
    AD_CHECK(!rng.fail(), kInvalidArgument, "checkpoint '{}': corrupt random engine state", *path);
    step_ = checkpoint.step();
    result.resumed_from_step = step_;
    Emit(fmt::format("resumed from {} at step {}", *path, step_));
    return data::Position{checkpoint.epoch(), checkpoint.batch()};
  }

  const TrainerOptions& options_;
  LineSink sink_;
  onnx::ModelProto model_;
  Session session_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  optim::LrSchedule schedule_;
  std::shared_ptr<const data::Dataset> train_;
  std::shared_ptr<const data::Dataset> eval_;
  std::map<std::string, std::vector<int64_t>> row_shapes_;
  bool accuracy_ = false;  // logits output and label input exist
  int64_t step_ = 0;
};

}  // namespace

void ApplyGradients(const std::map<std::string, Gradient>& gradients, Session& session,
                    optim::Optimizer& optimizer) {
  for (const auto& [name, gradient] : gradients) {
    Tensor& parameter = session.variable(name);
    if (gradient.is_sparse()) {
      optimizer.ApplySparse(name, parameter, *gradient.sparse);
    } else {
      optimizer.Apply(name, parameter, gradient.dense);
    }
  }
}

TrainResult Train(const TrainerOptions& options, const LineSink& sink) {
  Run run(options, sink);
  return run.Train();
}

}  // namespace autodist::exec
