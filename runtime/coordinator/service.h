// The coordinator service (proto/coordinator.proto), hosted by the chief's process: rendezvous,
// the Strategy and initial values, barriers, heartbeats, progress, the reduction of
// replica-local state and the key-value store collectives rendezvous through. The bookkeeping
// lives in JobState, Barriers, ReduceRounds and KeyValueStore; this class
// adds the one lock around them, the waiting (every blocking call also ends when the job fails,
// its wait passes, its caller goes away or the service shuts down) and a thread that enforces the
// deadlines. The protocol and its failure semantics: docs/coordinator.md.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "proto/coordinator.grpc.pb.h"
#include "proto/strategy.pb.h"
#include "runtime/coordinator/barriers.h"
#include "runtime/coordinator/job.h"
#include "runtime/coordinator/rounds.h"
#include "runtime/coordinator/store.h"
#include "runtime/coordinator/types.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::coordinator {

struct CoordinatorOptions {
  // A running member that sends neither a heartbeat nor progress for this long is presumed dead,
  // which fails the job. Default 10 s: clients beat about once a second.
  std::chrono::milliseconds heartbeat_deadline{10000};
  // Every member must have registered this long after the service started, or the job fails.
  // 0: no limit. Default 2 min: enough for pods to be scheduled and images pulled on a warm node.
  std::chrono::milliseconds rendezvous_deadline{120000};
  // Cap on any wait a client asks for (wait_ms), and the wait of a client that asks for none.
  // Default 10 min.
  std::chrono::milliseconds max_wait{600000};
  // Largest total size of the tensors of one upload (initial values, or one worker's sums of a
  // reduction round): announcing more is rejected before anything is allocated. Default 4 GiB.
  int64_t max_tensor_bytes = int64_t{4} << 30;
  // Bounds of the key-value store collectives rendezvous through (StoreSet/StoreGet).
  StoreLimits store_limits{};
};

class CoordinatorService final : public autodist::proto::Coordinator::Service {
 public:
  // Throws InvalidArgument when `spec` has no valid set of members (see ExpectedMembers).
  CoordinatorService(strategy::ResourceSpec spec, autodist::proto::Strategy strategy,
                     std::string job_id, CoordinatorOptions options = {});
  // Shuts down. The RpcServer hosting the service must be shut down before it is destroyed.
  ~CoordinatorService() override;
  CoordinatorService(const CoordinatorService&) = delete;
  CoordinatorService& operator=(const CoordinatorService&) = delete;

  // Stops the deadline thread and ends every blocked call with UNAVAILABLE; later calls (except
  // Status) fail the same way. Call it before shutting the server down, so that no blocked call
  // holds the server open until its grace period ends.
  void Shutdown();

  // The job as Status reports it.
  StatusSnapshot Snapshot() const;
  // Waits until nothing is left to serve (JobState::settled: the job succeeded, or it failed and
  // every member still running has been told). Returns whether it settled within `timeout`.
  bool WaitSettled(std::chrono::milliseconds timeout);

  grpc::Status Register(grpc::ServerContext* context,
                        const autodist::proto::RegisterRequest* request,
                        autodist::proto::RegisterReply* reply) override;
  grpc::Status Barrier(grpc::ServerContext* context, const autodist::proto::BarrierRequest* request,
                       autodist::proto::BarrierReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* context,
                         const autodist::proto::HeartbeatRequest* request,
                         autodist::proto::HeartbeatReply* reply) override;
  grpc::Status ReportProgress(grpc::ServerContext* context,
                              const autodist::proto::ProgressReport* request,
                              autodist::proto::ProgressReply* reply) override;
  grpc::Status Status(grpc::ServerContext* context, const autodist::proto::StatusRequest* request,
                      autodist::proto::StatusReply* reply) override;
  grpc::Status Finish(grpc::ServerContext* context, const autodist::proto::FinishRequest* request,
                      autodist::proto::FinishReply* reply) override;
  grpc::Status Abort(grpc::ServerContext* context, const autodist::proto::AbortRequest* request,
                     autodist::proto::AbortReply* reply) override;
  grpc::Status PutInitialValues(grpc::ServerContext* context,
                                grpc::ServerReader<autodist::proto::InitialValuesMessage>* reader,
                                autodist::proto::InitialValuesReply* reply) override;
  grpc::Status GetInitialValues(
      grpc::ServerContext* context, const autodist::proto::InitialValuesRequest* request,
      grpc::ServerWriter<autodist::proto::InitialValuesMessage>* writer) override;
  grpc::Status ReduceStates(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<autodist::proto::TensorPiece, autodist::proto::ReduceMessage>*
          stream) override;
  grpc::Status StoreSet(grpc::ServerContext* context,
                        const autodist::proto::StoreSetRequest* request,
                        autodist::proto::StoreSetReply* reply) override;
  grpc::Status StoreGet(grpc::ServerContext* context,
                        const autodist::proto::StoreGetRequest* request,
                        autodist::proto::StoreGetReply* reply) override;

 private:
  using Clock = JobState::Clock;

  // The chief's upload, shared with the downloads streaming it (tensors are never modified).
  struct Upload {
    autodist::proto::InitialValuesHeader header;
    TensorMap tensors;
  };

  // How a wait ended: its condition held, or why not.
  enum class WaitEnd { kReady, kFailed, kShutdown, kCancelled, kTimedOut };

  // Waits (releasing `lock` in between) until `ready()`, the job fails, the service shuts down,
  // the caller goes away or `wait_ms` passes (0: max_wait; never more than max_wait).
  WaitEnd WaitFor(std::unique_lock<std::mutex>& lock, grpc::ServerContext* context, int64_t wait_ms,
                  const std::function<bool()>& ready);
  // The status of a wait that ended without its condition: `what` names the call and the
  // caller, `waiting_for` says what did not happen ("worker-1 to arrive").
  grpc::Status WaitError(WaitEnd end, const std::string& node, const std::string& what,
                         int64_t wait_ms, const std::string& waiting_for);
  // ABORTED with the failure reason; `node` now knows that the job failed.
  grpc::Status Aborted(const std::string& node);
  // Throws Unavailable once the service is shutting down.
  void CheckOpen() const;
  std::chrono::milliseconds EffectiveWait(int64_t wait_ms) const;
  void WatchDeadlines();
  // The job's status, with the resume point of the chief's upload (which JobState never sees).
  autodist::proto::StatusReply StatusLocked() const;

  const CoordinatorOptions options_;
  const autodist::proto::Strategy strategy_;
  const Clock::time_point started_;
  const std::optional<Clock::time_point> rendezvous_deadline_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;  // any state change: waiters re-check their condition
  JobState job_;
  Barriers barriers_;
  ReduceRounds rounds_;
  KeyValueStore store_;
  std::shared_ptr<const Upload> initial_values_;
  bool shutting_down_ = false;
  std::thread deadline_thread_;
};

}  // namespace autodist::coordinator
