#include "operator/reconcile/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <tuple>

#include "operator/reconcile/restart_policy.h"
#include "runtime/job/member_exit.h"

namespace autodist::reconcile {
namespace {

constexpr size_t kMaxNamed = 3;  // failures named in a message; the rest are counted

struct Failure {
  const Member* member;
  std::string what;  // "failed with exit code 137 (OOMKilled)"
  std::optional<int> exit_code;
};

std::string Describe(const std::vector<Failure>& failures) {
  std::string text;
  for (size_t i = 0; i < failures.size() && i < kMaxNamed; ++i) {
    if (i > 0) text += "; ";
    text += fmt::format("pod {} ({}) {}", failures[i].member->pod, failures[i].member->node,
                        failures[i].what);
  }
  if (failures.size() > kMaxNamed) {
    text += fmt::format("; and {} more", failures.size() - kMaxNamed);
  }
  return text;
}

}  // namespace

std::string FirstFailure(const std::vector<ObservedPod>& current, const JobMembers& members) {
  const ObservedPod* first = nullptr;
  const Member* first_member = nullptr;
  // Earlier is better; a cause (not exit code 3) beats a member stopped because of one; then the
  // time it ended (RFC 3339 in UTC, which sorts as text; unknown last), then member order.
  const auto rank = [](const ObservedPod& pod) {
    return std::make_tuple(pod.exit_code == job::kMemberExitJobFailed, pod.finished_at.empty(),
                           pod.finished_at);
  };
  for (const Member& member : members.members) {
    for (const ObservedPod& pod : current) {
      if (pod.role != member.role || pod.index != member.index || pod.terminating ||
          pod.phase != MemberPhase::kPodFailed || !pod.exit_code.has_value()) {
        continue;
      }
      if (first == nullptr || rank(pod) < rank(*first)) {
        first = &pod;
        first_member = &member;
      }
    }
  }
  if (first == nullptr) return "";
  return fmt::format(
      "{} (pod {}) failed first, with {}{}", first_member->node, first_member->pod,
      DescribeEnd(*first),
      first->last_line.empty() ? std::string(" and no message") : ": " + first->last_line);
}

Verdict JudgeMembers(const std::vector<ObservedPod>& current, const JobMembers& members,
                     job::RestartPolicy policy, bool was_running, TimePoint now) {
  const auto pod_of = [&](const Member& member) -> const ObservedPod* {
    for (const ObservedPod& pod : current) {
      if (pod.role == member.role && pod.index == member.index) return &pod;
    }
    return nullptr;
  };
  const Member& chief = members.chief();
  if (const ObservedPod* pod = pod_of(chief); pod && pod->phase == MemberPhase::kPodSucceeded) {
    return {Verdict::Kind::kChiefSucceeded,
            fmt::format("pod {} ({}, the chief) completed training", chief.pod, chief.node),
            std::nullopt};
  }

  std::vector<Failure> failures;
  for (const Member& member : members.members) {
    const ObservedPod* pod = pod_of(member);
    // A Terminating pod was deleted by someone else (the operator's own deletions are of
    // earlier gangs, or end the job): a member lost. Before the gang ran, it is what a
    // suspension left behind, and its replacement waits for its name.
    if (pod != nullptr && pod->terminating) {
      if (was_running) {
        failures.push_back({&member, "was deleted while the job was running", std::nullopt});
      }
    } else if (pod != nullptr && pod->phase == MemberPhase::kPodFailed) {
      failures.push_back({&member, "failed with " + DescribeEnd(*pod), pod->exit_code});
    } else if (pod == nullptr && was_running) {
      failures.push_back({&member, "disappeared while the job was running", std::nullopt});
    }
  }
  if (failures.empty()) return {};

  // A member stopped because another failed (exit 3) reflects that failure; only when nothing
  // else is seen does it stand for the cause.
  std::vector<Failure> causes;
  std::copy_if(failures.begin(), failures.end(), std::back_inserter(causes),
               [](const Failure& f) { return f.exit_code != job::kMemberExitJobFailed; });
  if (causes.empty()) {
    // The member that failed is usually still reporting the failure to the others: wait for its
    // own exit, which decides under the restart policy, as long as it may take.
    std::optional<TimePoint> first_stop;
    for (const ObservedPod& pod : current) {
      if (pod.phase != MemberPhase::kPodFailed || pod.terminating) continue;
      const std::optional<TimePoint> stopped = ParseRfc3339(pod.finished_at);
      if (stopped && (!first_stop || *stopped < *first_stop)) first_stop = stopped;
    }
    const bool others_run = std::any_of(current.begin(), current.end(),
                                        [](const ObservedPod& pod) { return pod.Active(); });
    if (others_run && first_stop && now < *first_stop + kCauseGrace) {
      Verdict wait;
      wait.judge_again_in = SecondsUntil(now, *first_stop + kCauseGrace);
      return wait;
    }
    causes = failures;
  }

  std::vector<Failure> permanent;
  for (const Failure& failure : causes) {
    // Exit 3 alone carries no verdict of its own: it is retried like a signal.
    const std::optional<int> code =
        failure.exit_code == job::kMemberExitJobFailed ? std::nullopt : failure.exit_code;
    if (ClassifyFailure(policy, code) == FailureClass::kPermanent) permanent.push_back(failure);
  }
  if (!permanent.empty()) {
    return {Verdict::Kind::kPermanentFailure,
            fmt::format("{} (permanent under restartPolicy {})", Describe(permanent),
                        job::RestartPolicyName(policy)),
            std::nullopt};
  }
  return {Verdict::Kind::kRetryableFailure,
          fmt::format("{} (retryable under restartPolicy {})", Describe(causes),
                      job::RestartPolicyName(policy)),
          std::nullopt};
}

}  // namespace autodist::reconcile
