#include <fmt/format.h>

#include <filesystem>

#include "launcher/child_process.h"
#include "launcher/commands.h"
#include "launcher/runtime_executable.h"
#include "runtime/common/error.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_views.h"

namespace autodist::cli {

int RunProfile(const ProfileCommandOptions& options) {
  // Read here first, so that a bad manifest is the command's error, not the child's.
  const job::JobSpec job = job::LoadJobFile(options.manifest);
  job::RequireLocalModel(job);
  AD_CHECK(options.steps >= 1, kInvalidArgument, "--steps {}: expected at least 1", options.steps);
  AD_CHECK(!options.output.empty(), kInvalidArgument, "-o: the profile needs a file name");
  launcher::ProcessSpec spec;
  spec.name = "profile";
  spec.argv = {launcher::RuntimeExecutable(options.runtime),
               "--profile-job",
               std::filesystem::absolute(options.manifest).string(),
               "--profile-output",
               std::filesystem::absolute(options.output).string(),
               "--profile-steps",
               std::to_string(options.steps),
               "--threads",
               std::to_string(options.threads)};
  spec.share_output = true;
  const launcher::SpawnedChild child = launcher::SpawnChild(spec);
  int status = 0;
  launcher::WaitForPid(child.pid, &status);
  return launcher::ShellExitCode(status);
}

}  // namespace autodist::cli
