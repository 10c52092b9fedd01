#include "runtime/cli/trainer_options.h"

#include "runtime/data/fashion_mnist.h"
#include "runtime/job/job_views.h"

namespace autodist::cli {

exec::TrainerOptions TrainerOptionsFromJob(const job::JobSpec& job, int first_replica,
                                           int local_replicas, int total_replicas) {
  exec::TrainerOptions options;
  options.model = job::RequireLocalModel(job);
  options.loss = job.model.loss;
  options.logits = job.model.logits;
  options.labels = job.model.labels;
  if (job.data.format == job::DataFormat::kFashionMnist) {
    const std::string root = job.data.dir.empty() ? data::kFashionMnistRoot : job.data.dir;
    options.train_files = data::FashionMnistFiles("train", root);
    options.eval_files = data::FashionMnistFiles("test", root);
  } else {
    options.train_files = job.data.train;
    options.eval_files = job.data.eval;
  }
  options.batch_size = job.data.batch_size_per_replica;
  options.eval_batch_size = job.data.eval_batch_size;
  options.shuffle = job.data.shuffle;
  options.seed = job.data.seed;
  options.epochs = job.training.epochs;
  options.steps = job.training.steps;
  options.optimizer = job.training.optimizer;
  options.schedule = job.training.lr_schedule;
  options.log_every = job.training.log_interval_steps;
  options.eval_every = job.training.eval_interval_steps;
  if (job.training.checkpoint) {
    options.checkpoint_dir = job.training.checkpoint->path;
    options.checkpoint_every = job.training.checkpoint->interval_steps;
    options.resume = job.training.checkpoint->resume;
    options.checkpoint_keep = job.training.checkpoint->keep;
  }
  options.export_path = job.training.export_path;
  options.export_options.external_data = job.training.export_external_data;
  options.precision = job.training.precision;
  options.local_replicas = local_replicas;
  options.rank = first_replica;
  options.world_size = total_replicas;
  options.sum_states = job::SumReducedStates(job);
  return options;
}

}  // namespace autodist::cli
