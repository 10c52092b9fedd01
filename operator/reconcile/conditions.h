// The condition types and reasons of an AutoDistJob's status (Kubeflow's job conditions plus
// Compiled); docs/operator-reconcile.md says when each is set.
#pragma once

namespace autodist::reconcile {

// Condition types.
inline constexpr char kCreated[] = "Created";
inline constexpr char kCompiled[] = "Compiled";
inline constexpr char kRunning[] = "Running";
inline constexpr char kRestarting[] = "Restarting";
inline constexpr char kSucceeded[] = "Succeeded";
inline constexpr char kFailed[] = "Failed";
inline constexpr char kSuspended[] = "Suspended";

// Reasons (CamelCase, as metav1.Condition requires).
inline constexpr char kReasonJobCreated[] = "JobCreated";
inline constexpr char kReasonStrategyCompiled[] = "StrategyCompiled";
inline constexpr char kReasonModelNotFound[] = "ModelNotFound";  // waiting; retried
// spec.strategy.profile: waiting for its ConfigMap (retried), or not readable (failed).
inline constexpr char kReasonProfileNotFound[] = "ProfileNotFound";
inline constexpr char kReasonInvalidSpec[] = "InvalidSpec";
inline constexpr char kReasonInvalidModel[] = "InvalidModel";
inline constexpr char kReasonUnsupportedModel[] = "UnsupportedModel";
inline constexpr char kReasonCompileFailed[] = "CompileFailed";
inline constexpr char kReasonPodsPending[] = "PodsPending";
inline constexpr char kReasonAllPodsRunning[] = "AllPodsRunning";
inline constexpr char kReasonGangRestart[] = "GangRestart";
inline constexpr char kReasonJobSucceeded[] = "JobSucceeded";
inline constexpr char kReasonPodFailed[] = "PodFailed";
inline constexpr char kReasonBackoffLimitExceeded[] = "BackoffLimitExceeded";
inline constexpr char kReasonDeadlineExceeded[] = "DeadlineExceeded";
// The API server refused to create a child (as ReplicaSets say it): Failed, or Running False
// while a used-up quota may still admit it (rejection.h).
inline constexpr char kReasonFailedCreate[] = "FailedCreate";
// Running False: a pod waited longer than the scheduling timeout for a node (the scheduler's
// message), or for a scheduler that never acted on it (an unknown schedulerName).
inline constexpr char kReasonUnschedulable[] = "Unschedulable";
inline constexpr char kReasonJobSuspended[] = "JobSuspended";
inline constexpr char kReasonJobResumed[] = "JobResumed";
// Events without a condition of their own.
inline constexpr char kReasonBuilderChosen[] = "BuilderChosen";
inline constexpr char kReasonResumedFromCheckpoint[] = "ResumedFromCheckpoint";
inline constexpr char kReasonMemberFailed[] = "MemberFailed";
// The manifest's output (checkpoints, ...) goes to emptyDirs: no volume of the template is there.
inline constexpr char kReasonOutputNotPersistent[] = "OutputNotPersistent";
// Event only: the job is deleted ttlSecondsAfterFinished after it finished.
inline constexpr char kReasonTtlExpired[] = "TTLExpired";

}  // namespace autodist::reconcile
