// Whether a job's training is already complete, as far as its checkpoints tell: `autodist run`
// on such a job says so instead of starting every process for a run of zero steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/job/job_spec.h"

namespace autodist::cli {

struct FinishedRun {
  int64_t step = 0;        // the step of the checkpoint
  std::string checkpoint;  // its path
};

// The newest readable checkpoint of `job` when it already holds the end of the training the job
// asks for (spec.training.steps reached, or spec.training.epochs passed); nullopt when the job
// keeps no checkpoints, does not resume from them (checkpoint.resume false), has none yet or has
// training left. A torn or corrupt newest checkpoint is passed over for the one before it, as
// the trainer does when it resumes.
std::optional<FinishedRun> FindFinishedRun(const job::JobSpec& job);

}  // namespace autodist::cli
