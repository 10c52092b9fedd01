// A job manifest's training settings as the training loop's options: the one translation from
// spec.model / spec.data / spec.training to TrainerOptions, used by every process of a job.
#pragma once

#include "runtime/exec/trainer.h"
#include "runtime/job/job_spec.h"

namespace autodist::cli {

// The options of a process that runs `local_replicas` replicas, the first with global index
// `first_replica`, of a job with `total_replicas`. Resolves the data files (fashion-mnist: the
// package's files under spec.data.dir); the model must be a local file.
exec::TrainerOptions TrainerOptionsFromJob(const job::JobSpec& job, int first_replica,
                                           int local_replicas, int total_replicas);

}  // namespace autodist::cli
