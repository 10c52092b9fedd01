// Learning-rate schedules: the learning rate of each optimizer step as a closed-form function of
// the step number, with the values torch.optim.lr_scheduler gives (StepLR, CosineAnnealingLR,
// LinearLR warm-up chained by SequentialLR). Closed form means a restarted job resumes the
// schedule from the checkpointed step count alone.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace autodist::optim {

struct ScheduleOptions {
  // "constant" | "step" | "cosine".
  std::string kind = "constant";
  // Linear warm-up over the first warmup_steps steps, from warmup_start_factor * base_lr towards
  // base_lr (torch LinearLR(start_factor, end_factor=1, total_iters=warmup_steps)); the schedule
  // proper then starts counting from 0 at step warmup_steps (SequentialLR with milestone
  // warmup_steps). The default factor 1/3 is LinearLR's; unlike LinearLR, 0 is accepted (warm-up
  // from zero).
  int64_t warmup_steps = 0;
  double warmup_start_factor = 1.0 / 3.0;
  // step: lr = base_lr * gamma^floor(t / step_size) (StepLR).
  int64_t step_size = 0;
  double gamma = 0.1;
  // cosine: lr = min_lr + (base_lr - min_lr) * (1 + cos(pi * t / T)) / 2 with
  // T = total_steps - warmup_steps (CosineAnnealingLR(T_max=T, eta_min=min_lr)); total_steps
  // counts the warm-up. After T the rate stays at min_lr (torch's would rise again: cosine is
  // periodic).
  int64_t total_steps = 0;
  double min_lr = 0;
};

// Parses {kind, warmup_steps, warmup_start_factor, step_size, gamma, total_steps, min_lr} (snake
// or camelCase keys); options that the kind does not use are rejected. Throws InvalidArgument
// naming the option and what was expected.
ScheduleOptions ParseScheduleOptions(const std::map<std::string, std::string>& options);

class LrSchedule {
 public:
  // Validates the options (InvalidArgument naming the option).
  LrSchedule(double base_lr, ScheduleOptions options);

  // The learning rate of the update that follows `step` completed optimizer steps (step 0: the
  // first update). Doubles, as torch computes them; Optimizer::set_learning_rate takes it as is.
  double LearningRate(int64_t step) const;

  double base_lr() const { return base_lr_; }
  const ScheduleOptions& options() const { return options_; }

 private:
  double base_lr_;
  ScheduleOptions options_;
};

}  // namespace autodist::optim
