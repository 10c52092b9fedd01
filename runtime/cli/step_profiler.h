// `autodist profile`: measures what Auto's cost model needs of a job's step
// (strategy/step_profile.h) by training the job's model on its data, in this process, with one
// worker's replicas and the job's batch per replica, for a few steps.
//
// The loop is the trainer's own with a synchronizer that applies the optimizer locally and
// records, per step: when the step began (the previous update's end), when each gradient of the
// worker's last replica became final during backward, and how long the update took. The forward
// pass is what comes before the first final gradient (with several replicas per worker, the
// earlier replicas' whole steps too: exactly what precedes the overlap the cost model assumes);
// backward runs from the first final gradient to the last. Each time is the median over the
// measured steps, each gradient's fraction of backward their mean; a sparse table's rows are the
// unique rows per replica and step. Then the runtime's fixed costs: a small all-reduce between two
// ranks over loopback, and each compressor's compute per element on the model's dense gradients
// (one rank, so no wire). The parameter-server round keeps strategy::DefaultRuntimeCosts' value.
#pragma once

#include <cstdint>

#include "runtime/job/job_spec.h"
#include "runtime/strategy/step_profile.h"

namespace autodist::cli {

struct ProfileOptions {
  int64_t warmup_steps = 3;  // not measured: first-touch allocation, caches
  int64_t steps = 20;        // measured
  int threads = 0;           // compute threads (0: the machine's cores)
};

// Throws InvalidArgument for fewer than 1 measured step or a job whose model is not a local file,
// and what training throws (bad data, a non-finite loss).
strategy::StepProfile ProfileJob(const job::JobSpec& job, const ProfileOptions& options);

}  // namespace autodist::cli
