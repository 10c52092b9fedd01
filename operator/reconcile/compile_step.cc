// Compiling the job's Strategy when its ConfigMap or status still needs it; model and compile
// errors become conditions.
#include <fmt/format.h>

#include <optional>

#include "operator/reconcile/config_map.h"
#include "operator/reconcile/model_source.h"
#include "operator/reconcile/reconcile_steps.h"
#include "runtime/common/error.h"
#include "runtime/graph/graph_item.h"
#include "runtime/graph/op_support.h"
#include "runtime/job/job_views.h"

namespace autodist::reconcile::detail {
namespace {

std::string ModelName(const job::JobSpec& job, const std::string& namespace_name) {
  if (!job.model.config_map.has_value()) return fmt::format("model '{}'", job.model.path);
  return fmt::format("model in ConfigMap {}/{} key '{}'", namespace_name,
                     job.model.config_map->name, job.model.config_map->key);
}

// Runs `body`; a user error it throws fails the job with `reason` (Compiled False, Failed) and
// returns false. Other errors (unreachable API, bugs) go up to be retried.
template <typename Body>
bool Attempt(Context& context, const job::JobSpec& job, const std::vector<ObservedPod>& pods,
             const char* reason, Body body) {
  try {
    body();
    return true;
  } catch (const Error& error) {
    if (!error.IsUserError()) throw;
    context.record.NotCompiled(reason, error.what(), false);
    Finish(context, job, pods, reason, error.what());
    return false;
  }
}

}  // namespace

CompileOutcome EnsureCompiled(Context& context, const job::JobSpec& job,
                              const std::vector<ObservedPod>& pods, ModelSource& models,
                              std::optional<nlohmann::json>& config_map) {
  // The ConfigMap holds the compiled Strategy and the status its summary: with both in place
  // there is nothing to compile (and no model to fetch) on every later reconcile.
  if (context.observed.config_map.has_value() && !context.status.strategy.is_null()) {
    return CompileOutcome::kReady;
  }
  std::string bytes;
  try {
    bytes = FetchModel(job, context.ref.namespace_name, models);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::kNotFound) {
      if (!error.IsUserError()) throw;
      context.record.NotCompiled(kReasonInvalidModel, error.what(), false);
      Finish(context, job, pods, kReasonInvalidModel, error.what());
      return CompileOutcome::kFailed;
    }
    // The user may create the model's ConfigMap after the job: wait for it.
    context.record.NotCompiled(kReasonModelNotFound, error.what(), true);
    context.plan.RequeueAfter(context.options.model_retry_interval);
    return CompileOutcome::kWaiting;
  }
  const std::string model_name = ModelName(job, context.ref.namespace_name);
  std::optional<graph::GraphItem> model;
  if (!Attempt(context, job, pods, kReasonInvalidModel,
               [&] { model.emplace(graph::GraphItem::Parse(bytes, model_name)); })) {
    return CompileOutcome::kFailed;
  }
  // Before any pod exists: a model with ops the workers cannot run would otherwise fail in every
  // pod, restarted until spec.runPolicy.backoffLimit.
  if (!Attempt(context, job, pods, kReasonUnsupportedModel, [&] {
        graph::CheckOpsSupported(model->ops(), job::WorkerBackend(job), model_name);
      })) {
    return CompileOutcome::kFailed;
  }
  const std::vector<graph::Variable> variables = model->TrainableVariables();
  std::optional<std::string> profile;
  try {
    profile = FetchProfile(job, context.ref.namespace_name, models);
  } catch (const Error& error) {
    if (!error.IsUserError()) throw;
    // Like the model's: the user may create the profile's ConfigMap after the job.
    const bool waiting = error.code() == ErrorCode::kNotFound;
    context.record.NotCompiled(kReasonProfileNotFound, error.what(), waiting);
    if (!waiting) {
      Finish(context, job, pods, kReasonProfileNotFound, error.what());
      return CompileOutcome::kFailed;
    }
    context.plan.RequeueAfter(context.options.model_retry_interval);
    return CompileOutcome::kWaiting;
  }
  std::optional<CompiledJob> compiled;
  if (!Attempt(context, job, pods, kReasonCompileFailed, [&] {
        compiled = CompileJob(job, variables, profile);
        // Too large a Strategy for its ConfigMap fails here, with each key's size, rather than
        // as the API server's 422 on the create.
        if (!context.observed.config_map.has_value()) {
          config_map = BuildConfigMap(context.ref, job, *compiled, context.options);
        }
      })) {
    return CompileOutcome::kFailed;
  }
  context.status.strategy = StrategyStatus(*compiled);
  // With the transition only: a job that compiles again (its ConfigMap is missing while it waits
  // for a name, or was deleted) has said why this builder already.
  if (context.record.Compiled(CompiledMessage(*compiled))) {
    context.record.Announce(
        kEventNormal, kReasonBuilderChosen,
        fmt::format("{} ({} workers with {} GPU(s) each, {} parameter server(s))",
                    compiled->builder_reason, job.resources.workers, job.resources.gpus_per_worker,
                    job.resources.parameter_servers));
  }
  return CompileOutcome::kReady;
}

}  // namespace autodist::reconcile::detail
