#include "runtime/job/job_spec.h"

#include <tuple>

namespace autodist::job {
namespace {

// optim's option structs have no operator==; every field is compared here.
bool SameOptimizer(const optim::OptimizerOptions& a, const optim::OptimizerOptions& b) {
  auto fields = [](const optim::OptimizerOptions& o) {
    return std::tie(o.name, o.lr, o.momentum, o.dampening, o.nesterov, o.weight_decay, o.beta1,
                    o.beta2, o.eps, o.amsgrad, o.lr_decay, o.initial_accumulator_value, o.alpha,
                    o.centered, o.lazy_sparse);
  };
  return fields(a) == fields(b);
}

bool SameSchedule(const optim::ScheduleOptions& a, const optim::ScheduleOptions& b) {
  auto fields = [](const optim::ScheduleOptions& o) {
    return std::tie(o.kind, o.warmup_steps, o.warmup_start_factor, o.step_size, o.gamma,
                    o.total_steps, o.min_lr);
  };
  return fields(a) == fields(b);
}

}  // namespace

bool TrainingSpec::operator==(const TrainingSpec& other) const {
  return epochs == other.epochs && steps == other.steps &&
         SameOptimizer(optimizer, other.optimizer) &&
         optimizer_options == other.optimizer_options &&
         SameSchedule(lr_schedule, other.lr_schedule) &&
         lr_schedule_options == other.lr_schedule_options && checkpoint == other.checkpoint &&
         eval_interval_steps == other.eval_interval_steps &&
         log_interval_steps == other.log_interval_steps && export_path == other.export_path &&
         export_external_data == other.export_external_data && precision == other.precision &&
         tensorboard_path == other.tensorboard_path && timeline_path == other.timeline_path;
}

const char* DataFormatName(DataFormat format) {
  switch (format) {
    case DataFormat::kFashionMnist:
      return "fashion-mnist";
    case DataFormat::kFiles:
      return "files";
  }
  return "unknown";
}

const char* StateReductionName(StateReduction reduction) {
  switch (reduction) {
    case StateReduction::kMean:
      return "Mean";
    case StateReduction::kSum:
      return "Sum";
  }
  return "unknown";
}

const char* CleanPodPolicyName(CleanPodPolicy policy) {
  switch (policy) {
    case CleanPodPolicy::kNone:
      return "None";
    case CleanPodPolicy::kRunning:
      return "Running";
    case CleanPodPolicy::kAll:
      return "All";
  }
  return "unknown";
}

const char* RestartPolicyName(RestartPolicy policy) {
  switch (policy) {
    case RestartPolicy::kNever:
      return "Never";
    case RestartPolicy::kOnFailure:
      return "OnFailure";
    case RestartPolicy::kExitCode:
      return "ExitCode";
  }
  return "unknown";
}

}  // namespace autodist::job
