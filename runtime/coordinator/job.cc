#include "runtime/coordinator/job.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::coordinator {
namespace {

double Seconds(JobState::Clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

}  // namespace

std::vector<MemberInfo> ExpectedMembers(const strategy::ResourceSpec& spec) {
  std::vector<MemberInfo> workers;
  std::vector<MemberInfo> servers;
  for (const strategy::NodeSpec& node : spec.nodes()) {
    MemberInfo member;
    member.node = node.address;
    if (node.role == strategy::NodeRole::kParameterServer) {
      AD_CHECK(!node.chief, kInvalidArgument,
               "resource spec: chief node '{}' has role ps, but the chief must host replicas "
               "(it runs the coordinator and worker 0)",
               node.address);
      member.role = MemberRole::kParameterServer;
      servers.push_back(std::move(member));
    } else if (node.chief) {
      workers.insert(workers.begin(), std::move(member));
    } else {
      workers.push_back(std::move(member));
    }
  }
  AD_CHECK(!workers.empty(), kInvalidArgument,
           "resource spec: no node hosts replicas, so the job has no workers");
  for (size_t i = 0; i < workers.size(); ++i) workers[i].rank = static_cast<int>(i);
  for (size_t i = 0; i < servers.size(); ++i) servers[i].rank = static_cast<int>(i);
  workers.insert(workers.end(), servers.begin(), servers.end());
  return workers;
}

JobState::JobState(const strategy::ResourceSpec& spec, std::string job_id,
                   Clock::time_point started)
    : job_id_(std::move(job_id)), started_(started) {
  for (MemberInfo& info : ExpectedMembers(spec)) {
    if (info.role == MemberRole::kWorker) ++world_size_;
    index_.emplace(info.node, members_.size());
    MemberState state;
    state.info = std::move(info);
    members_.push_back(std::move(state));
  }
}

std::string JobState::NodeList() const {
  std::vector<std::string> nodes;
  for (const MemberState& member : members_) nodes.push_back(member.info.node);
  return ListNodes(nodes, 20);
}

JobState::MemberState& JobState::Find(const std::string& node, const std::string& what) {
  return const_cast<MemberState&>(std::as_const(*this).Find(node, what));
}

const JobState::MemberState& JobState::Find(const std::string& node,
                                            const std::string& what) const {
  AD_CHECK(!node.empty(), kInvalidArgument, "{}: the request names no node", what);
  const auto it = index_.find(node);
  if (it == index_.end()) {
    autodist::Fail(ErrorCode::kInvalidArgument,
                   "{}: node '{}' is not a member of job '{}'; its nodes are: {}", what, node,
                   job_id_, NodeList());
  }
  return members_[it->second];
}

JobState::MemberState& JobState::FindRegistered(const std::string& node, const std::string& what) {
  MemberState& member = Find(node, what);
  AD_CHECK(member.registered, kFailedPrecondition, "{}: node '{}' has not registered", what, node);
  return member;
}

const MemberInfo& JobState::Member(const std::string& node, const std::string& what) const {
  return Find(node, what).info;
}

const MemberInfo& JobState::RegisteredWorker(const std::string& node,
                                             const std::string& what) const {
  const MemberState& member = Find(node, what);
  AD_CHECK(member.info.role == MemberRole::kWorker, kInvalidArgument,
           "{}: node '{}' is a parameter server; only workers take part", what, node);
  AD_CHECK(member.registered, kFailedPrecondition, "{}: node '{}' has not registered", what, node);
  return member.info;
}

std::vector<std::string> JobState::WorkerNodes() const {
  std::vector<std::string> nodes;
  for (const MemberState& member : members_) {
    if (member.info.role == MemberRole::kWorker) nodes.push_back(member.info.node);
  }
  return nodes;
}

std::optional<std::string> JobState::Register(const autodist::proto::RegisterRequest& request,
                                              Clock::time_point now) {
  const std::string what = "Register";
  MemberState& member = Find(request.node(), what);
  const MemberRole role =
      MemberRoleFromProto(request.role(), fmt::format("Register of node '{}'", request.node()));
  AD_CHECK(role == member.info.role, kInvalidArgument,
           "Register: node '{}' is a {} in the job's resource spec, but registered as a {}",
           request.node(), MemberRoleName(member.info.role), MemberRoleName(role));
  AD_CHECK(!request.endpoint().empty(), kInvalidArgument,
           "Register: node '{}' gave no endpoint (host:port of its server)", request.node());
  AD_CHECK(request.pid() >= 0, kInvalidArgument, "Register: node '{}' gave a negative pid {}",
           request.node(), request.pid());
  AD_CHECK(request.job_id().empty() || request.job_id() == job_id_, kFailedPrecondition,
           "Register: node '{}' belongs to job '{}', but this coordinator runs job '{}'",
           request.node(), request.job_id(), job_id_);
  if (member.registered) {
    if (member.info.pid != request.pid() || member.info.endpoint != request.endpoint()) {
      return fmt::format(
          "Register: node '{}' is already registered by pid {} at {}; another process (pid {} at "
          "{}) claims it too: every node runs exactly one process",
          request.node(), member.info.pid, member.info.endpoint, request.pid(), request.endpoint());
    }
  } else {
    member.registered = true;
    member.info.pid = request.pid();
    member.info.endpoint = request.endpoint();
  }
  if (!running_) ++member.register_calls;
  if (!running_ && MissingNodes().empty()) StartRunning(now);
  return std::nullopt;
}

void JobState::StartRunning(Clock::time_point now) {
  running_ = true;
  if (phase_ == JobPhase::kRendezvous) phase_ = JobPhase::kRunning;
  // Heartbeats are due from the moment everyone knows the rendezvous completed.
  for (MemberState& member : members_) {
    member.last_heartbeat = now;
    member.register_calls = 0;
  }
}

void JobState::LeaveRendezvous(const std::string& node) {
  if (running_) return;
  MemberState& member = Find(node, "Register");
  if (member.register_calls > 0) --member.register_calls;
  if (member.register_calls == 0 && member.registered) {
    member.registered = false;
    member.info.pid = 0;
    member.info.endpoint.clear();
  }
}

std::vector<std::string> JobState::MissingNodes() const {
  std::vector<std::string> missing;
  for (const MemberState& member : members_) {
    if (!member.registered) missing.push_back(member.info.node);
  }
  return missing;
}

int JobState::registered() const {
  return static_cast<int>(
      std::count_if(members_.begin(), members_.end(), [](const auto& m) { return m.registered; }));
}

autodist::proto::RegisterReply JobState::RegisterReplyFor(const std::string& node) const {
  autodist::proto::RegisterReply reply;
  reply.set_rank(Member(node, "Register").rank);
  reply.set_world_size(world_size_);
  reply.set_job_id(job_id_);
  for (const MemberState& member : members_) *reply.add_members() = ToProto(member.info);
  return reply;
}

void JobState::Heartbeat(const std::string& node, int64_t step, Clock::time_point now) {
  MemberState& member = FindRegistered(node, "Heartbeat");
  member.last_heartbeat = std::max(member.last_heartbeat, now);
  if (member.info.role == MemberRole::kWorker) member.step = std::max(member.step, step);
}

void JobState::Progress(const autodist::proto::ProgressReport& report, Clock::time_point now) {
  const std::string what = "ReportProgress";
  RegisteredWorker(report.node(), what);
  AD_CHECK(report.step() >= 0 && report.total_steps() >= 0 && report.samples() >= 0,
           kInvalidArgument,
           "ReportProgress: node '{}' reported negative counts (step {}, total steps {}, "
           "samples {})",
           report.node(), report.step(), report.total_steps(), report.samples());
  MemberState& member = Find(report.node(), what);
  member.last_heartbeat = std::max(member.last_heartbeat, now);
  member.step = report.step();
  member.total_steps = report.total_steps();
  member.loss = report.loss();
  member.samples_per_second = report.samples_per_second();
  member.samples = report.samples();
}

void JobState::Finish(const std::string& node, bool failed, const std::string& reason) {
  MemberState& member = Find(node, "Finish");
  if (failed) {
    member.finished = true;
    member.notified = true;  // it knows: it is the one failing
    Fail(fmt::format("{} failed: {}", member.info.Describe(),
                     reason.empty() ? std::string("no reason given") : reason));
    return;
  }
  AD_CHECK(member.registered && running_, kFailedPrecondition,
           "Finish: node '{}' finished before the rendezvous completed", node);
  member.finished = true;
  const bool all_finished = std::all_of(members_.begin(), members_.end(),
                                        [](const MemberState& m) { return m.finished; });
  if (all_finished && phase_ == JobPhase::kRunning) phase_ = JobPhase::kSucceeded;
}

void JobState::Fail(const std::string& reason) {
  if (phase_ == JobPhase::kFailed || phase_ == JobPhase::kSucceeded) return;
  phase_ = JobPhase::kFailed;
  reason_ = reason;
}

bool JobState::CheckDeadlines(Clock::time_point now, Clock::duration heartbeat_deadline,
                              std::optional<Clock::time_point> rendezvous_deadline) {
  if (phase_ == JobPhase::kRendezvous) {
    if (!rendezvous_deadline || now < *rendezvous_deadline) return false;
    Fail(fmt::format("the rendezvous did not complete within {:.1f} s: {} never registered",
                     Seconds(*rendezvous_deadline - started_), ListNodes(MissingNodes())));
    return true;
  }
  if (phase_ != JobPhase::kRunning) return false;
  std::string overdue;
  for (MemberState& member : members_) {
    if (member.finished || member.lost) continue;
    const auto age = now - member.last_heartbeat;
    if (age <= heartbeat_deadline) continue;
    member.lost = true;
    if (!overdue.empty()) overdue += "; ";
    overdue += fmt::format("{} sent no heartbeat for {:.1f} s (deadline {:.1f} s)",
                           member.info.Describe(), Seconds(age), Seconds(heartbeat_deadline));
  }
  if (overdue.empty()) return false;
  Fail(overdue);
  return true;
}

void JobState::MarkNotified(const std::string& node) {
  const auto it = index_.find(node);
  if (it != index_.end()) members_[it->second].notified = true;
}

bool JobState::workers_finished() const {
  return std::all_of(members_.begin(), members_.end(), [](const MemberState& m) {
    return m.info.role != MemberRole::kWorker || m.finished;
  });
}

void JobState::MarkToldWorkersFinished(const std::string& node) {
  const auto it = index_.find(node);
  if (it != index_.end()) members_[it->second].told_workers_finished = true;
}

bool JobState::settled() const {
  if (phase_ == JobPhase::kSucceeded) {
    return std::all_of(members_.begin(), members_.end(),
                       [](const MemberState& m) { return m.told_workers_finished || m.lost; });
  }
  if (phase_ != JobPhase::kFailed) return false;
  return std::all_of(members_.begin(), members_.end(), [](const MemberState& m) {
    return !m.registered || m.finished || m.lost || m.notified;
  });
}

autodist::proto::StatusReply JobState::Status(Clock::time_point now) const {
  autodist::proto::StatusReply reply;
  reply.set_phase(ToProto(phase_));
  reply.set_reason(reason_);
  reply.set_registered(registered());
  reply.set_expected(expected());
  reply.set_job_id(job_id_);
  reply.set_elapsed_seconds(Seconds(now - started_));
  int64_t slowest = std::numeric_limits<int64_t>::max();
  int64_t total_steps = 0;
  double rate = 0;
  int64_t samples = 0;
  for (const MemberState& member : members_) {
    auto* status = reply.add_members();
    status->set_node(member.info.node);
    status->set_role(ToProto(member.info.role));
    status->set_rank(member.info.rank);
    status->set_pid(member.info.pid);
    status->set_endpoint(member.info.endpoint);
    status->set_registered(member.registered);
    status->set_finished(member.finished);
    status->set_step(member.step);
    if (running_ && member.registered) {
      status->set_heartbeat_age_seconds(Seconds(now - member.last_heartbeat));
    }
    if (member.info.role != MemberRole::kWorker) continue;
    slowest = std::min(slowest, member.step);
    total_steps = std::max(total_steps, member.total_steps);
    rate += member.samples_per_second;
    samples += member.samples;
  }
  reply.set_step(slowest == std::numeric_limits<int64_t>::max() ? 0 : slowest);
  reply.set_total_steps(total_steps);
  reply.set_samples_per_second(rate);
  reply.set_samples(samples);
  const MemberState& chief = members_.front();
  if (chief.loss) {
    reply.set_has_loss(true);
    reply.set_loss(*chief.loss);
  }
  return reply;
}

}  // namespace autodist::coordinator
