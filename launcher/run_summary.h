// The final report of `autodist run`: one headline (job, outcome, wall time, steps, accuracy)
// and one line per process (workers: steps, throughput, last loss; parameter servers: bytes
// pushed and pulled). Pure formatting over the processes' result files.
#pragma once

#include <string>
#include <vector>

#include "runtime/job/member_result.h"

namespace autodist::launcher {

// `results` in member order (workers by rank, then parameter servers). Ends with a newline.
std::string FormatRunSummary(const std::string& job_name, double wall_seconds,
                             const std::vector<job::MemberResult>& results,
                             const std::string& log_dir);

}  // namespace autodist::launcher
