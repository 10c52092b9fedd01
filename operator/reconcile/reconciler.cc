// The order of the decisions of one reconcile; each step is in its own file (reconcile_steps.h).
#include "operator/reconcile/reconciler.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "operator/reconcile/object_meta.h"
#include "operator/reconcile/reconcile_steps.h"
#include "operator/reconcile/tls_secret.h"
#include "operator/reconcile/verdict.h"
#include "runtime/common/error.h"

namespace autodist::reconcile {
namespace {

using detail::Context;

// A Failed InvalidSpec from an earlier generation: the user edited the spec since, so it is
// judged afresh.
bool FailedForAnEarlierSpec(const Context& context) {
  const Condition* failed = context.status.Find(kFailed);
  return failed != nullptr && failed->status == "True" && failed->reason == kReasonInvalidSpec &&
         failed->observed_generation.value_or(-1) != context.ref.generation;
}

void FailInvalidSpec(Context& context, const std::string& message,
                     const std::vector<ObservedPod>& pods) {
  const bool fresh = FailedForAnEarlierSpec(context);
  if (context.status.Finished() && !fresh) return;  // a finished job stays finished
  if (fresh) {
    context.record.Remove(kFailed);
    context.status.completion_time.clear();
  }
  context.record.Failed(kReasonInvalidSpec, message);
  if (context.status.completion_time.empty()) context.status.completion_time = context.record.now();
  // Without a readable spec there is no cleanPodPolicy to follow: pods still running stop.
  for (const ObservedPod& pod : pods) {
    if (pod.Active()) detail::DeletePod(context, pod);
  }
}

void Suspend(Context& context, const std::optional<nlohmann::json>& config_map,
             const std::vector<ObservedPod>& pods) {
  for (const ObservedPod& pod : pods) detail::DeletePod(context, pod);
  // The ConfigMap costs nothing to keep and spares compiling on every reconcile until resumed.
  if (config_map.has_value()) context.plan.creates.push_back(*config_map);
  context.record.Suspended(
      "spec.runPolicy.suspend is true: the job's pods are deleted until it is resumed");
  // As Kubernetes Jobs do, the deadline counts active time only: it restarts on resume.
  context.status.start_time.clear();
  for (auto& [role, counts] : context.status.replica_statuses) counts = ReplicaStatus{};
}

// A status write lost after the pods of a gang restart were created would otherwise make their
// generation look stale: the newest generation among the pods is the current one.
void AdoptGeneration(Context& context, const std::vector<ObservedPod>& pods) {
  int newest = context.status.restart_count;
  for (const ObservedPod& pod : pods) newest = std::max(newest, pod.generation);
  if (newest == context.status.restart_count) return;
  context.status.restart_count = newest;
  // Whatever Running said was about an older generation.
  context.record.Restarting(
      fmt::format("found the pods of restart {}; continuing with them", newest));
}

// Terminating pods are on their way out (a deletion by someone else, which the verdict judges,
// or the leftovers of a suspension): they count in no column.
std::map<std::string, ReplicaStatus> CountReplicas(const std::vector<ObservedPod>& current,
                                                   const JobMembers& members) {
  std::map<std::string, ReplicaStatus> counts;
  counts[RoleStatusKey(Role::kWorker)] = ReplicaStatus{};
  if (members.parameter_servers > 0) counts[RoleStatusKey(Role::kParameterServer)] = {};
  for (const ObservedPod& pod : current) {
    if (pod.terminating) continue;
    ReplicaStatus& role = counts[RoleStatusKey(pod.role)];
    if (pod.Active()) ++role.active;
    if (pod.phase == MemberPhase::kPodSucceeded) ++role.succeeded;
    if (pod.phase == MemberPhase::kPodFailed) ++role.failed;
  }
  return counts;
}

// True (and the job Failed) once activeDeadlineSeconds ran out; otherwise requeues for it.
bool DeadlineExceeded(Context& context, const job::JobSpec& job, std::string& message) {
  const std::optional<int64_t> seconds = job.run_policy.active_deadline_seconds;
  const std::optional<TimePoint> start = ParseRfc3339(context.status.start_time);
  if (!seconds.has_value() || !start.has_value()) return false;
  const TimePoint deadline = *start + std::chrono::seconds(*seconds);
  if (context.observed.now < deadline) {
    context.plan.RequeueAfter(SecondsUntil(context.observed.now, deadline));
    return false;
  }
  message = fmt::format(
      "the job was active longer than spec.runPolicy.activeDeadlineSeconds ({} s) since {}",
      *seconds, context.status.start_time);
  return true;
}

void GangRestart(Context& context, const job::JobSpec& job, const JobMembers& members,
                 const std::vector<ObservedPod>& pods, const std::string& cause) {
  JobStatus& status = context.status;
  ++status.restart_count;
  const std::optional<int32_t> limit = job.run_policy.backoff_limit;
  const std::string resume =
      job.training.checkpoint.has_value()
          ? fmt::format("resuming from the latest checkpoint in {}", job.training.checkpoint->path)
          : std::string("starting over: the job has no spec.training.checkpoint");
  context.record.Restarting(
      fmt::format("{}; restarting all {} pods (restart {}{}), {}", cause, members.members.size(),
                  status.restart_count,
                  limit.has_value() ? fmt::format(" of at most {}", *limit) : "", resume));
  for (const ObservedPod& pod : pods) detail::DeletePod(context, pod);
}

// A finished job's counts follow its pods as long as none of them has gone: a member that
// completes just after the chief (whose success finished the job) is still counted, while
// clean-up, which deletes pods, never erases the record. Once training succeeded, a member
// that clean-up stops (Terminating, then Failed by the signal) or that went with it counts as
// succeeded, not as a failure of the job (as Kubeflow's operators count it).
void RecountFinished(JobStatus& status, const std::vector<ObservedPod>& pods) {
  const bool succeeded = status.IsTrue(kSucceeded);
  for (auto& [role, counts] : status.replica_statuses) {
    ReplicaStatus now;
    for (const ObservedPod& pod : pods) {
      if (pod.generation != status.restart_count || RoleStatusKey(pod.role) != role) continue;
      if ((succeeded && pod.terminating) || pod.phase == MemberPhase::kPodSucceeded) {
        ++now.succeeded;
      } else if (pod.Active()) {
        ++now.active;
      } else if (pod.phase == MemberPhase::kPodFailed) {
        ++now.failed;
      }
    }
    if (now.active + now.succeeded + now.failed ==
        counts.active + counts.succeeded + counts.failed) {
      counts = now;
    } else if (succeeded) {
      counts.succeeded += counts.active;
      counts.active = 0;
    }
  }
}

// The chief exits 0 only after the last step, which the last progress read (polled while it
// ran) may predate, or which no read saw at all: a short job can finish between two reads, the
// only one made during the rendezvous, before the coordinator knew the total. A succeeded job
// has done all of its steps: the coordinator's total, else the spec's training.steps (unknown
// for a job that counts epochs).
void CompleteProgress(JobStatus& status, const nlohmann::json& job, const std::string& now) {
  if (!status.progress.is_object()) return;
  int64_t total = 0;
  const nlohmann::json reported = status.progress.value("totalSteps", nlohmann::json());
  if (reported.is_number_integer()) {
    total = reported.get<int64_t>();
  } else {
    const nlohmann::json::json_pointer path("/spec/training/steps");
    if (job.contains(path) && job.at(path).is_number_integer()) total = job.at(path).get<int64_t>();
  }
  if (total <= 0 || status.progress.value("step", int64_t{0}) >= total) return;
  status.progress["step"] = total;
  status.progress["totalSteps"] = total;
  status.progress["lastUpdateTime"] = now;
}

// What the pod that has waited longest for a node waits for, once it is past the scheduling
// timeout (the message names the timeout, not the time waited, so it changes only with the
// cause); until then, a requeue for when it will be.
std::optional<std::string> SchedulingWait(Context& context,
                                          const std::vector<ObservedPod>& current) {
  const ObservedPod* longest = nullptr;
  TimePoint since;
  for (const ObservedPod& pod : current) {
    if (pod.scheduled || pod.terminating || pod.phase != MemberPhase::kPodPending) continue;
    const std::optional<TimePoint> created = ParseRfc3339(pod.created);
    if (!created.has_value()) continue;
    if (longest == nullptr || *created < since) {
      longest = &pod;
      since = *created;
    }
  }
  if (longest == nullptr) return std::nullopt;
  const std::chrono::milliseconds timeout = context.options.scheduling_timeout;
  const TimePoint due = since + timeout;
  if (context.observed.now < due) {
    context.plan.RequeueAfter(SecondsUntil(context.observed.now, due));
    return std::nullopt;
  }
  const std::string within =
      fmt::format("within {} s (the operator's --scheduling-timeout)",
                  std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
  if (!longest->unschedulable.empty()) {
    return fmt::format("pod {} was not scheduled {}: {}", longest->name, within,
                       longest->unschedulable);
  }
  return fmt::format(
      "pod {} was not scheduled {}, and its scheduler '{}' never acted on it: is "
      "'{}' running in the cluster? (spec.template.spec.schedulerName, or the "
      "operator's gang scheduling)",
      longest->name, within, longest->scheduler, longest->scheduler);
}

void MarkRunningOrPending(Context& context, const JobMembers& members,
                          const std::vector<ObservedPod>& current) {
  const auto started =
      static_cast<size_t>(std::count_if(current.begin(), current.end(), [](const ObservedPod& pod) {
        return !pod.terminating &&
               (pod.phase == MemberPhase::kPodRunning || pod.phase == MemberPhase::kPodSucceeded);
      }));
  const size_t total = members.members.size();
  const std::optional<Rejection>& rejection = context.observed.rejection;
  if (started == total) {
    const int restarts = context.status.restart_count;
    context.record.Running(
        fmt::format("all {} pods are running{}", total,
                    restarts > 0 ? fmt::format(" (after restart {})", restarts) : std::string()));
  } else if (rejection.has_value()) {
    // Only a refusal that may clear gets here (others fail the job): say why the pods are
    // missing while the controller keeps trying.
    context.record.CreateRefused(DescribeRejection(*rejection) +
                                 "; trying again until it is admitted");
  } else if (const std::optional<std::string> wait = SchedulingWait(context, current)) {
    context.record.Unschedulable(*wait);
  } else if (!context.status.IsTrue(kRunning) && !context.status.IsTrue(kRestarting)) {
    context.record.Pending(fmt::format("{} of {} pods are running", started, total));
  }
}

void ReconcileJob(Context& context, const std::vector<ObservedPod>& pods, ModelSource& models) {
  JobStatus& status = context.status;
  std::optional<job::JobSpec> parsed;
  try {
    parsed = ParseJobObject(context.observed.job, context.options);
  } catch (const Error& error) {
    if (!error.IsUserError()) throw;
    FailInvalidSpec(context, error.what(), pods);
    return;
  }
  const job::JobSpec& job = *parsed;
  if (FailedForAnEarlierSpec(context)) {
    context.record.Remove(kFailed);
    status.completion_time.clear();
  }
  if (status.Finished()) {
    RecountFinished(status, pods);
    detail::TidyFinished(context, job, pods);
    return;
  }
  context.record.Created(fmt::format("{} worker(s) and {} parameter server(s), builder {}",
                                     job.resources.workers, job.resources.parameter_servers,
                                     job.strategy.builder));
  std::optional<nlohmann::json> config_map;
  if (detail::EnsureCompiled(context, job, pods, models, config_map) !=
      detail::CompileOutcome::kReady) {
    return;
  }

  if (job.run_policy.suspend) {
    Suspend(context, config_map, pods);
    return;
  }
  if (status.IsTrue(kSuspended)) {
    context.record.Resumed(
        "spec.runPolicy.suspend is false: the job's pods are created again and continue from "
        "the latest checkpoint");
  }
  if (status.start_time.empty()) status.start_time = context.record.now();

  AdoptGeneration(context, pods);
  const int generation = status.restart_count;
  const JobMembers members =
      ListMembers(context.ref.name, context.ref.namespace_name, job.resources.workers,
                  job.resources.parameter_servers, context.options.addresses, generation);
  std::vector<ObservedPod> current;
  std::copy_if(pods.begin(), pods.end(), std::back_inserter(current),
               [&](const ObservedPod& pod) { return pod.generation == generation; });
  status.replica_statuses = CountReplicas(current, members);

  const Verdict verdict = JudgeMembers(current, members, job.run_policy.restart_policy,
                                       status.IsTrue(kRunning), context.observed.now);
  if (verdict.judge_again_in) context.plan.RequeueAfter(*verdict.judge_again_in);
  if (verdict.kind == Verdict::Kind::kChiefSucceeded) {
    detail::Finish(context, job, pods, "", verdict.message);
    return;
  }
  // The deadline before failures: a job past it is not worth another restart.
  if (std::string message; DeadlineExceeded(context, job, message)) {
    detail::Finish(context, job, pods, kReasonDeadlineExceeded, message);
    return;
  }
  if (verdict.kind == Verdict::Kind::kPermanentFailure ||
      verdict.kind == Verdict::Kind::kRetryableFailure) {
    // Announced once: the gang is replaced, or the job ends, with this verdict.
    if (const std::string first = FirstFailure(current, members); !first.empty()) {
      context.record.Announce(kEventWarning, kReasonMemberFailed, first);
    }
  }
  if (verdict.kind == Verdict::Kind::kPermanentFailure) {
    detail::Finish(context, job, pods, kReasonPodFailed, verdict.message);
    return;
  }
  if (verdict.kind == Verdict::Kind::kRetryableFailure) {
    const std::optional<int32_t> limit = job.run_policy.backoff_limit;
    if (limit.has_value() && status.restart_count >= *limit) {
      detail::Finish(context, job, pods, kReasonBackoffLimitExceeded,
                     fmt::format("{}; the job was restarted {} time(s), as many as "
                                 "spec.runPolicy.backoffLimit ({}) allows",
                                 verdict.message, status.restart_count, *limit));
    } else {
      GangRestart(context, job, members, pods, verdict.message);
    }
    return;
  }

  // A child the API server refuses for good: the job cannot start (or restart) as specified.
  if (const std::optional<Rejection>& rejection = context.observed.rejection;
      rejection.has_value() && !rejection->may_clear) {
    detail::Finish(context, job, pods, kReasonFailedCreate, DescribeRejection(*rejection));
    return;
  }
  // Pods that start after a gang restart or a resume continue from the checkpoint.
  const bool continuing = generation > 0 || status.Find(kSuspended) != nullptr;
  detail::PlanChildren(context, job, members, config_map, pods, generation, continuing);
  MarkRunningOrPending(context, members, current);
  // The chief hosts the coordinator, whose progress the controller reads while it runs.
  for (const ObservedPod& pod : current) {
    if (pod.role == Role::kWorker && pod.index == 0 && !pod.terminating &&
        pod.phase == MemberPhase::kPodRunning) {
      // With job TLS the coordinator accepts only the job's certificates: the operator's is in
      // the job's Secret, and until that is observed there is nothing to read progress with.
      if (!context.options.tls.enabled) {
        context.plan.coordinator = members.Coordinator();
      } else if (context.observed.tls_secret.has_value()) {
        if (auto credentials = OperatorCredentials(*context.observed.tls_secret)) {
          context.plan.coordinator = members.Coordinator();
          context.plan.coordinator_credentials = std::move(credentials);
        }
      }
    }
  }
}

bool Foreign(const std::optional<nlohmann::json>& child, const JobRef& ref) {
  return child.has_value() && !IsControlledBy(*child, ref);
}

}  // namespace

Plan Reconcile(const Observed& observed, const ReconcilerOptions& options, ModelSource& models) {
  const JobRef ref = ReadJobRef(observed.job);
  Plan plan;
  if (ref.deleting) return plan;  // garbage collection removes the children with the job
  // A child found by name that the job does not control is not the job's: an earlier job's of the
  // same name that garbage collection has not removed yet, or someone else's. Its contents (an
  // older Strategy, other members) must never reach the job's pods, so it counts as missing: the
  // create meets its name, and the controller reports the holder (rejection.h).
  if (Foreign(observed.config_map, ref) || Foreign(observed.service, ref) ||
      Foreign(observed.pod_group, ref) || Foreign(observed.tls_secret, ref)) {
    Observed own = observed;
    for (std::optional<nlohmann::json>* child :
         {&own.config_map, &own.service, &own.pod_group, &own.tls_secret}) {
      if (Foreign(*child, ref)) child->reset();
    }
    return Reconcile(own, options, models);
  }
  JobStatus status = JobStatus::FromJson(observed.job.value("status", nlohmann::json()));
  const nlohmann::json before = status.ToJson();
  StatusRecorder record(status, FormatRfc3339(observed.now), ref.generation, plan.events);
  Context context{observed, options, ref, status, record, plan};

  ReconcileJob(context, ObservePods(observed.pods, ref), models);

  if (observed.progress.has_value()) {
    status.progress = ProgressStatus(*observed.progress, status.progress, record.now());
    const std::optional<int64_t> resumed = observed.progress->resumed_from_step;
    if (resumed.has_value() && resumed != status.resumed_from_step) {
      record.Announce(
          kEventNormal, kReasonResumedFromCheckpoint,
          status.restart_count > 0
              ? fmt::format("the gang of restart {} resumed from the checkpoint of "
                            "step {}",
                            status.restart_count, *resumed)
              : fmt::format("the job resumed from the checkpoint of step {}", *resumed));
      status.resumed_from_step = resumed;
    }
  }
  if (status.IsTrue(kSucceeded)) CompleteProgress(status, observed.job, record.now());
  status.observed_generation = ref.generation;
  status.state = DeriveState(status);
  nlohmann::json after = status.ToJson();
  if (after != before) plan.status = std::move(after);
  return plan;
}

}  // namespace autodist::reconcile
