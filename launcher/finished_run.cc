#include "launcher/finished_run.h"

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_file.h"
#include "runtime/common/error.h"

namespace autodist::cli {
namespace {

// A checkpoint's meta records the data position of the next batch, so the one written after the
// last step of epoch E (counted from 1) reads epoch E, batch 0.
bool Complete(const job::TrainingSpec& training, const checkpoint::CheckpointMeta& meta) {
  if (training.steps > 0) return meta.step >= training.steps;
  return training.epochs > 0 && meta.epoch >= training.epochs;
}

}  // namespace

std::optional<FinishedRun> FindFinishedRun(const job::JobSpec& job) {
  const std::optional<job::CheckpointSpec>& spec = job.training.checkpoint;
  if (!spec.has_value() || !spec->resume) return std::nullopt;
  for (const std::string& path : checkpoint::ListCheckpoints(spec->path)) {
    try {
      const checkpoint::CheckpointReader reader(path);
      if (!Complete(job.training, reader.meta())) return std::nullopt;
      return FinishedRun{reader.meta().step, path};
    } catch (const Error&) {
      // Torn or corrupt: the trainer would resume from the one before it.
    }
  }
  return std::nullopt;
}

}  // namespace autodist::cli
