// What the launcher, the operator and the runtime take from a parsed JobSpec.
#pragma once

#include <set>
#include <string>

#include "runtime/graph/kernel_catalog.h"
#include "runtime/job/job_spec.h"
#include "runtime/strategy/compiler.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::job {

// spec.resources as the strategy compiler's replica counts (ResourceSpec::FromReplicaCounts).
strategy::ReplicaCounts ToReplicaCounts(const JobSpec& job);

// What the cost model needs of spec.training.optimizer (whether parameter servers send back
// changed rows or whole tables).
strategy::OptimizerTraits OptimizerTraitsOf(const JobSpec& job);

// spec.strategy as a compile request: builder, options, colocation groups, and what Auto reads
// (lossy compression allowed or not, the batch per replica, the step profile when there is one).
strategy::CompileRequest ToCompileRequest(const JobSpec& job,
                                          std::optional<strategy::StepProfile> profile);

// spec.strategy.profile.path read and checked against the model and the job (CheckProfileMatches);
// nullopt when the manifest names no profile. Throws InvalidArgument for a ConfigMap profile
// (only the operator reads those), NotFound for a missing file, InvalidArgument for a bad one.
std::optional<strategy::StepProfile> ReadLocalProfile(
    const JobSpec& job, const std::vector<graph::Variable>& variables);

// Throws InvalidArgument naming `source` when `profile` was taken on another model, batch or
// replica count than the job's (strategy::CheckProfileMatches).
void CheckProfileMatches(const strategy::StepProfile& profile, const JobSpec& job,
                         const std::vector<graph::Variable>& variables, const std::string& source);

// Data-parallel replicas of the whole job: workers x GPUs per worker, or workers x CPU replicas
// per worker without GPUs. The global batch is this times data.batchSizePerReplica.
int64_t TotalReplicas(const JobSpec& job);

// The backend the job's workers run the model on: CUDA when spec.resources gives them GPUs.
graph::Backend WorkerBackend(const JobSpec& job);

// The replica-local state variables reduced by sum rather than mean (exec's
// TrainerOptions::sum_states).
std::set<std::string> SumReducedStates(const JobSpec& job);

// The model's local file for running on this machine; throws InvalidArgument naming the job
// when the model is a ConfigMap reference, which only the operator can mount.
const std::string& RequireLocalModel(const JobSpec& job);

}  // namespace autodist::job
