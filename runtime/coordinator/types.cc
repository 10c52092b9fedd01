#include "runtime/coordinator/types.h"

#include <fmt/format.h>

#include "runtime/common/error.h"

namespace autodist::coordinator {

const char* MemberRoleName(MemberRole role) {
  return role == MemberRole::kWorker ? "worker" : "ps";
}

autodist::proto::MemberRole ToProto(MemberRole role) {
  return role == MemberRole::kWorker ? autodist::proto::MEMBER_ROLE_WORKER
                                     : autodist::proto::MEMBER_ROLE_PS;
}

MemberRole MemberRoleFromProto(autodist::proto::MemberRole role, const std::string& what) {
  switch (role) {
    case autodist::proto::MEMBER_ROLE_WORKER:
      return MemberRole::kWorker;
    case autodist::proto::MEMBER_ROLE_PS:
      return MemberRole::kParameterServer;
    default:
      Fail(ErrorCode::kInvalidArgument, "{}: expected role worker or ps, got {}", what,
           role == autodist::proto::MEMBER_ROLE_UNSPECIFIED ? std::string("none")
                                                            : std::to_string(role));
  }
}

const char* JobPhaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::kRendezvous:
      return "Rendezvous";
    case JobPhase::kRunning:
      return "Running";
    case JobPhase::kSucceeded:
      return "Succeeded";
    case JobPhase::kFailed:
      return "Failed";
  }
  return "Unknown";
}

autodist::proto::JobPhase ToProto(JobPhase phase) {
  switch (phase) {
    case JobPhase::kRendezvous:
      return autodist::proto::JOB_PHASE_RENDEZVOUS;
    case JobPhase::kRunning:
      return autodist::proto::JOB_PHASE_RUNNING;
    case JobPhase::kSucceeded:
      return autodist::proto::JOB_PHASE_SUCCEEDED;
    case JobPhase::kFailed:
      return autodist::proto::JOB_PHASE_FAILED;
  }
  return autodist::proto::JOB_PHASE_FAILED;
}

JobPhase JobPhaseFromProto(autodist::proto::JobPhase phase) {
  switch (phase) {
    case autodist::proto::JOB_PHASE_RENDEZVOUS:
      return JobPhase::kRendezvous;
    case autodist::proto::JOB_PHASE_RUNNING:
      return JobPhase::kRunning;
    case autodist::proto::JOB_PHASE_SUCCEEDED:
      return JobPhase::kSucceeded;
    default:
      return JobPhase::kFailed;
  }
}

std::string MemberInfo::Describe() const {
  if (pid > 0) return fmt::format("{} ({} rank {}, pid {})", node, MemberRoleName(role), rank, pid);
  return fmt::format("{} ({} rank {})", node, MemberRoleName(role), rank);
}

std::vector<MemberInfo> RegisterResult::MembersOf(MemberRole role) const {
  std::vector<MemberInfo> out;
  for (const MemberInfo& member : members) {
    if (member.role == role) out.push_back(member);
  }
  return out;
}

std::string ListNodes(const std::vector<std::string>& nodes, size_t limit) {
  std::string out;
  for (size_t i = 0; i < nodes.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    out += nodes[i];
  }
  if (nodes.size() > limit) out += fmt::format(" and {} more", nodes.size() - limit);
  return out;
}

MemberInfo MemberFromProto(const autodist::proto::Member& member) {
  MemberInfo info;
  info.node = member.node();
  info.role = MemberRoleFromProto(member.role(), "member '" + member.node() + "'");
  info.rank = member.rank();
  info.endpoint = member.endpoint();
  info.pid = member.pid();
  return info;
}

autodist::proto::Member ToProto(const MemberInfo& member) {
  autodist::proto::Member out;
  out.set_node(member.node);
  out.set_role(ToProto(member.role));
  out.set_rank(member.rank);
  out.set_endpoint(member.endpoint);
  out.set_pid(member.pid);
  return out;
}

RegisterResult RegisterResultFromProto(const autodist::proto::RegisterReply& reply) {
  RegisterResult result;
  result.rank = reply.rank();
  result.world_size = reply.world_size();
  for (const auto& member : reply.members()) result.members.push_back(MemberFromProto(member));
  result.strategy = reply.strategy();
  result.job_id = reply.job_id();
  return result;
}

StatusSnapshot StatusFromProto(const autodist::proto::StatusReply& reply) {
  StatusSnapshot snapshot;
  snapshot.phase = JobPhaseFromProto(reply.phase());
  snapshot.reason = reply.reason();
  snapshot.registered = reply.registered();
  snapshot.expected = reply.expected();
  snapshot.step = reply.step();
  snapshot.total_steps = reply.total_steps();
  if (reply.has_loss()) snapshot.loss = reply.loss();
  snapshot.samples_per_second = reply.samples_per_second();
  snapshot.samples = reply.samples();
  for (const auto& member : reply.members()) {
    MemberStatus status;
    status.info.node = member.node();
    status.info.role = MemberRoleFromProto(member.role(), "member '" + member.node() + "'");
    status.info.rank = member.rank();
    status.info.pid = member.pid();
    status.info.endpoint = member.endpoint();
    status.registered = member.registered();
    status.finished = member.finished();
    status.step = member.step();
    status.heartbeat_age_seconds = member.heartbeat_age_seconds();
    snapshot.members.push_back(std::move(status));
  }
  snapshot.job_id = reply.job_id();
  snapshot.elapsed_seconds = reply.elapsed_seconds();
  if (reply.has_resumed_from_step()) snapshot.resumed_from_step = reply.resumed_from_step();
  return snapshot;
}

}  // namespace autodist::coordinator
