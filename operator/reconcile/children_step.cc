// Creating what a running job lacks, in the order the pods need it: ConfigMap, Service,
// PodGroup, then the pods of the current restart generation.
#include <fmt/format.h>

#include "operator/reconcile/conditions.h"
#include "operator/reconcile/network_policy.h"
#include "operator/reconcile/pod.h"
#include "operator/reconcile/pod_group.h"
#include "operator/reconcile/reconcile_steps.h"
#include "operator/reconcile/service.h"
#include "operator/reconcile/tls_secret.h"

namespace autodist::reconcile::detail {
namespace {

const nlohmann::json& PodTemplateOf(const nlohmann::json& job) {
  static const nlohmann::json kNone;
  const auto spec = job.find("spec");
  if (spec == job.end() || !spec->is_object()) return kNone;
  const auto found = spec->find("template");
  return found == spec->end() ? kNone : *found;
}

// A Warning Event when output the job keeps goes to emptyDirs: a gang restart's pods would not
// find the checkpoints, and everything is gone with the pods.
void WarnOfEphemeralOutput(Context& context, const std::vector<OutputDirectory>& ephemeral) {
  if (ephemeral.empty()) return;
  std::vector<std::string> named;
  named.reserve(ephemeral.size());
  for (const OutputDirectory& directory : ephemeral) {
    named.push_back(fmt::format("{} '{}'", directory.field, directory.path));
  }
  context.record.Announce(
      kEventWarning, kReasonOutputNotPersistent,
      fmt::format("{} {} on no volume of spec.template: each pod writes there to an emptyDir, "
                  "deleted with the pod (a gang restart cannot resume from checkpoints kept "
                  "so); mount a persistentVolumeClaim there",
                  fmt::join(named, ", "), named.size() == 1 ? "is" : "are"));
}

}  // namespace

void PlanChildren(Context& context, const job::JobSpec& job, const JobMembers& members,
                  const std::optional<nlohmann::json>& config_map,
                  const std::vector<ObservedPod>& pods, int generation, bool continuing) {
  const Observed& observed = context.observed;
  const ReconcilerOptions& options = context.options;
  std::vector<nlohmann::json>& creates = context.plan.creates;
  // EnsureCompiled builds it whenever the ConfigMap is missing.
  if (config_map.has_value()) creates.push_back(*config_map);
  if (!observed.service.has_value()) creates.push_back(BuildService(context.ref, members));
  // Before the pods, which mount it; made once, like the ConfigMap, so its keys never change
  // under running pods.
  if (options.tls.enabled && !observed.tls_secret.has_value()) {
    creates.push_back(BuildTlsSecret(context.ref, members, options.tls));
  }
  if (options.network_policy.enabled && !observed.network_policy.has_value()) {
    creates.push_back(
        BuildNetworkPolicy(context.ref, options.network_policy, RuntimeMetricsPort(options)));
  }
  if (UsesPodGroup(job, options.gang_scheduler) && !observed.pod_group.has_value()) {
    creates.push_back(BuildPodGroup(context.ref, job, options.gang_scheduler));
  }

  // The pods of earlier generations go (DeletePod skips those already Terminating); the new
  // gang's names are its own (names.h: PodName), so it starts at once, however long the old
  // pods take to stop.
  for (const ObservedPod& pod : pods) {
    if (pod.generation != generation) DeletePod(context, pod);
  }

  const nlohmann::json& pod_template = PodTemplateOf(observed.job);
  for (const Member& member : members.members) {
    bool exists = false;
    // A pod of this generation still Terminating (the leftovers of a suspension) holds its
    // name: its replacement follows once it is gone (its deletion requeues the job).
    for (const ObservedPod& pod : pods) exists = exists || pod.name == member.pod;
    if (exists) continue;
    std::vector<OutputDirectory> ephemeral;
    creates.push_back(BuildPod(PodRequest{context.ref, job, pod_template, members, member,
                                          generation, continuing, options},
                               &ephemeral));
    // Said once, with the first gang's chief: it writes the checkpoints and the export.
    if (generation == 0 && member.role == Role::kWorker && member.index == 0) {
      WarnOfEphemeralOutput(context, ephemeral);
    }
  }
}

}  // namespace autodist::reconcile::detail
