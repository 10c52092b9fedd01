// The job as the coordinator sees it: the members the ResourceSpec expects, who has registered,
// their liveness (heartbeats) and progress, and the phase of the job with its failure reason.
// Plain bookkeeping: not thread-safe (the service calls it under its one lock) and it never
// waits. Bad requests throw autodist::Error naming the node.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proto/coordinator.pb.h"
#include "runtime/coordinator/types.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::coordinator {

// The members a ResourceSpec describes: every node without `role: ps` is a worker (it hosts
// replicas), the others are parameter servers. Workers are ranked chief first, then in
// ResourceSpec order; parameter servers in ResourceSpec order. Throws InvalidArgument when the
// chief is a `role: ps` node (the chief hosts the coordinator and runs replicas).
std::vector<MemberInfo> ExpectedMembers(const strategy::ResourceSpec& spec);

class JobState {
 public:
  using Clock = std::chrono::steady_clock;

  JobState(const strategy::ResourceSpec& spec, std::string job_id, Clock::time_point started);

  // ---- Rendezvous ----

  // Records a Register call of a member and counts it as waiting. Throws InvalidArgument for an
  // unknown node, a wrong role, a missing endpoint or a negative pid, FailedPrecondition for
  // another job's id. A node already registered by another process (another pid or endpoint) is
  // not recorded: the message saying so is returned instead. The same process registering again
  // (a retried call) joins its earlier registration. Completes the rendezvous when it was the
  // last member missing.
  std::optional<std::string> Register(const autodist::proto::RegisterRequest& request,
                                      Clock::time_point now);
  // A Register call of `node` stopped waiting before the rendezvous completed (its deadline
  // passed or its caller went away). When no call of the node is left waiting its slot is freed,
  // so a restarted process can take it.
  void LeaveRendezvous(const std::string& node);
  bool rendezvous_complete() const { return running_; }
  // Nodes not registered yet, members order.
  std::vector<std::string> MissingNodes() const;
  int registered() const;
  autodist::proto::RegisterReply RegisterReplyFor(const std::string& node) const;

  // ---- Liveness and progress ----

  // Records a heartbeat (and the step it reports) of a registered member.
  void Heartbeat(const std::string& node, int64_t step, Clock::time_point now);
  // Records a worker's progress; also counts as a heartbeat.
  void Progress(const autodist::proto::ProgressReport& report, Clock::time_point now);
  // A member ends: successfully (no longer monitored; the job succeeds once every member has),
  // or failed, which fails the job with `reason`.
  void Finish(const std::string& node, bool failed, const std::string& reason);
  // Fails the job; the first reason is kept.
  void Fail(const std::string& reason);
  // Fails the job when the rendezvous has not completed by `rendezvous_deadline` or a running
  // member has sent no heartbeat for `heartbeat_deadline`. Returns whether it failed it now.
  bool CheckDeadlines(Clock::time_point now, Clock::duration heartbeat_deadline,
                      std::optional<Clock::time_point> rendezvous_deadline);
  // `node` has been told that the job failed (an abort reply or an ABORTED status).
  void MarkNotified(const std::string& node);
  // `node` has been told that every worker finished (a heartbeat reply said so).
  void MarkToldWorkersFinished(const std::string& node);

  // ---- Queries ----

  JobPhase phase() const { return phase_; }
  bool failed() const { return phase_ == JobPhase::kFailed; }
  const std::string& reason() const { return reason_; }
  const std::string& job_id() const { return job_id_; }
  // Every worker finished successfully (parameter servers may stop serving).
  bool workers_finished() const;
  // Nothing is left to serve: the job succeeded and every member has heard that the workers
  // finished (so none waits for a reply the coordinator's exit would cut off), or it failed and
  // every member that may still be running has been told.
  bool settled() const;
  int world_size() const { return world_size_; }
  int expected() const { return static_cast<int>(members_.size()); }

  // The member named `node`; throws InvalidArgument naming `what` (the call) for an unknown node.
  const MemberInfo& Member(const std::string& node, const std::string& what) const;
  // Like Member, and also requires a registered worker: barriers, progress and reductions are
  // the workers' business.
  const MemberInfo& RegisteredWorker(const std::string& node, const std::string& what) const;
  // Worker nodes by rank.
  std::vector<std::string> WorkerNodes() const;
  const MemberInfo& chief() const { return members_.front().info; }

  autodist::proto::StatusReply Status(Clock::time_point now) const;

 private:
  struct MemberState {
    MemberInfo info;
    bool registered = false;
    int register_calls = 0;  // Register calls waiting for the rendezvous
    bool finished = false;
    bool lost = false;      // missed its heartbeat deadline: presumed dead
    bool notified = false;  // knows the job failed
    bool told_workers_finished = false;
    Clock::time_point last_heartbeat;
    int64_t step = 0;
    int64_t total_steps = 0;
    std::optional<double> loss;
    double samples_per_second = 0;
    int64_t samples = 0;
  };

  MemberState& Find(const std::string& node, const std::string& what);
  const MemberState& Find(const std::string& node, const std::string& what) const;
  MemberState& FindRegistered(const std::string& node, const std::string& what);
  void StartRunning(Clock::time_point now);
  std::string NodeList() const;

  std::vector<MemberState> members_;  // workers by rank, then parameter servers by rank
  std::map<std::string, size_t> index_;
  int world_size_ = 0;
  std::string job_id_;
  Clock::time_point started_;
  JobPhase phase_ = JobPhase::kRendezvous;
  bool running_ = false;  // the rendezvous completed (the phase may have moved on since)
  std::string reason_;
};

}  // namespace autodist::coordinator
