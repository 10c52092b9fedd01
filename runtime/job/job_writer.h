// Writing a JobSpec back as an AutoDistJob manifest, e.g. for `kubectl apply` or to show the
// effective job with every default filled in.
#pragma once

#include <string>

#include "runtime/job/job_spec.h"

namespace autodist::job {

// The manifest of `job` with its defaults spelled out and its paths as resolved. Parsing the text
// with the same manifest directory gives `job` back: ParseJob(JobToYaml(j), s, j.manifest_dir) ==
// j.
std::string JobToYaml(const JobSpec& job);

}  // namespace autodist::job
