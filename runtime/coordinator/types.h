// The C++ view of what the coordinator (coordinator_service.h) and its clients exchange: member
// roles, job phases, a member of the job, the result of a rendezvous and a status snapshot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/coordinator.pb.h"
#include "proto/strategy.pb.h"

namespace autodist::coordinator {

enum class MemberRole {
  kWorker,           // a node that hosts replicas (and, without `role: worker`, parameter servers)
  kParameterServer,  // a node with `role: ps`
};

// "worker", "ps".
const char* MemberRoleName(MemberRole role);
autodist::proto::MemberRole ToProto(MemberRole role);
// Throws InvalidArgument naming `what` for MEMBER_ROLE_UNSPECIFIED or an unknown value.
MemberRole MemberRoleFromProto(autodist::proto::MemberRole role, const std::string& what);

enum class JobPhase { kRendezvous, kRunning, kSucceeded, kFailed };

// "Rendezvous", "Running", "Succeeded", "Failed".
const char* JobPhaseName(JobPhase phase);
autodist::proto::JobPhase ToProto(JobPhase phase);
JobPhase JobPhaseFromProto(autodist::proto::JobPhase phase);

// One process of the job, identified by its node address in the ResourceSpec.
struct MemberInfo {
  std::string node;  // "worker-1", "ps-0"
  MemberRole role = MemberRole::kWorker;
  int rank = 0;          // among the members of its role; the chief is worker 0
  std::string endpoint;  // host:port of its own gRPC server; empty until registered
  int64_t pid = 0;       // 0 until registered

  // "worker-1 (worker rank 1, pid 4242)": how messages name a member.
  std::string Describe() const;
};

struct RegisterResult {
  int rank = 0;
  int world_size = 0;               // worker processes
  std::vector<MemberInfo> members;  // workers by rank, then parameter servers by rank
  autodist::proto::Strategy strategy;
  std::string job_id;

  // The members of one role, by rank.
  std::vector<MemberInfo> MembersOf(MemberRole role) const;
};

struct MemberStatus {
  MemberInfo info;
  bool registered = false;
  bool finished = false;
  int64_t step = 0;
  double heartbeat_age_seconds = 0;
};

struct StatusSnapshot {
  JobPhase phase = JobPhase::kRendezvous;
  std::string reason;  // why the job failed
  int registered = 0;
  int expected = 0;
  int64_t step = 0;  // the slowest worker's step
  int64_t total_steps = 0;
  std::optional<double> loss;     // the chief's latest loss
  double samples_per_second = 0;  // summed over workers
  int64_t samples = 0;            // summed over workers
  std::vector<MemberStatus> members;
  std::string job_id;
  double elapsed_seconds = 0;
  std::optional<int64_t> resumed_from_step;  // the chief's checkpoint step, when it resumed
};

// "worker-1, worker-2, ps-0"; past `limit` names, "... and 12 more".
std::string ListNodes(const std::vector<std::string>& nodes, size_t limit = 10);

MemberInfo MemberFromProto(const autodist::proto::Member& member);
autodist::proto::Member ToProto(const MemberInfo& member);
RegisterResult RegisterResultFromProto(const autodist::proto::RegisterReply& reply);
StatusSnapshot StatusFromProto(const autodist::proto::StatusReply& reply);

}  // namespace autodist::coordinator
