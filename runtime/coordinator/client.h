// The members' side of the coordinator (coordinator_service.h; protocol in docs/coordinator.md).
// One channel per client; every call has a deadline, and a failed call throws autodist::Error
// naming "coordinator (<endpoint>): <Call>" and the coordinator's message: kUnavailable when the
// coordinator cannot be reached or a wait passed, kFailedPrecondition when the job failed (the
// message carries the reason) or the call does not fit the job's state, kInvalidArgument for a
// request the coordinator rejected.
//
// Thread-safe: a heartbeat thread and the training thread share one client. Only the barrier
// generations are shared state; one node uses a barrier name from one thread at a time.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "proto/coordinator.grpc.pb.h"
#include "runtime/coordinator/types.h"
#include "runtime/rpc/tensor_wire.h"
#include "runtime/security/process_credentials.h"
#include "runtime/tensor/tensor.h"

namespace autodist::coordinator {

struct CoordinatorClientOptions {
  // Deadline of a call that does not wait for other members (Heartbeat, Status, Finish, ...),
  // and the slack added to the wait of one that does, so that the coordinator's own answer
  // (which names who is missing) arrives before the call's deadline. Default 10 s.
  std::chrono::milliseconds call_timeout{10000};
  // Time allowed for moving tensors: the deadline of PutInitialValues, and added to the wait of
  // GetInitialValues and ReduceStates. Default 10 min (4 GiB at ~7 MB/s).
  std::chrono::milliseconds transfer_timeout{600000};
  // Size of the pieces tensors are sent in.
  int64_t piece_bytes = rpc::kDefaultPieceBytes;
  // Largest total size of the tensors one download may announce. Default 4 GiB.
  int64_t max_tensor_bytes = int64_t{4} << 30;
  // The job credentials the channel is mutual TLS with; by default this process's (the operator
  // passes each job's own). nullptr: plaintext.
  std::shared_ptr<const security::JobCredentials> credentials = security::ProcessCredentials();
};

// The coordinator's answer to a heartbeat.
struct HeartbeatResult {
  bool abort = false;             // the job failed: stop and exit
  std::string reason;             // why it failed
  bool workers_finished = false;  // every worker finished: parameter servers may stop too
};

// The initial values and the point training resumes from (0s when starting from scratch).
struct InitialValues {
  int64_t step = 0;   // steps already completed
  int64_t epoch = 0;  // the epoch to resume in
  int64_t batch = 0;  // batches of that epoch already consumed
  std::map<std::string, tensor::Tensor> tensors;
};

class CoordinatorClient {
 public:
  // `endpoint`: host:port of the chief's server. Connects lazily.
  explicit CoordinatorClient(std::string endpoint, CoordinatorClientOptions options = {});

  const std::string& endpoint() const { return endpoint_; }

  // Registers `self` (node, role, endpoint, pid) and waits until every member has registered.
  // Retries while the coordinator is unreachable (the chief's server may start after the
  // others) until `wait` passes. The same process may call again after a failure: the
  // coordinator recognises it by pid and endpoint.
  RegisterResult Register(const MemberInfo& self, const std::string& job_id,
                          std::chrono::milliseconds wait);

  // Waits until every worker arrives at barrier `name`. The client counts how often `node` passed
  // each name, so a name can be reused (one barrier per epoch); a failed call may be retried and
  // joins the same arrival.
  void Barrier(const std::string& node, const std::string& name, std::chrono::milliseconds wait);

  // Tells the coordinator `node` is alive (and its step); the reply says whether to stop.
  HeartbeatResult Heartbeat(const std::string& node, int64_t step);
  // Also counts as a heartbeat. Throws kFailedPrecondition once the job has failed.
  void ReportProgress(const autodist::proto::ProgressReport& report);
  StatusSnapshot Status(std::chrono::milliseconds timeout);
  // `node` ends; `failed` fails the job with `reason`.
  void Finish(const std::string& node, bool failed, const std::string& reason);
  // Fails the job from outside (the launcher saw a process die).
  void Abort(const std::string& reason);

  // The chief uploads the initial values and the resume point, once per job.
  void PutInitialValues(const std::string& node, const InitialValues& values);
  // Waits up to `wait` for the chief's upload and downloads it.
  InitialValues GetInitialValues(const std::string& node, std::chrono::milliseconds wait);

  // One round of the reduction of replica-local state: `sums` holds, per tensor, this worker's
  // sum over the `replicas` replicas it runs (float32). Returns, per tensor, the sum over every
  // worker's sums, divided by the job's total replica count unless the tensor is in
  // `sum_states`. Waits up to `wait` for the other workers. Round names are single-use (put the
  // step in them); every worker must send the same tensors with the same shapes.
  std::map<std::string, tensor::Tensor> ReduceStates(
      const std::string& node, const std::string& round, int replicas,
      const std::map<std::string, tensor::Tensor>& sums, const std::set<std::string>& sum_states,
      std::chrono::milliseconds wait);

  // The key-value store collectives rendezvous through (coordinator_gloo_store.h). Only
  // registered workers may use it; keys are at most 1 KiB, values at most 1 MiB.
  void StoreSet(const std::string& node, const std::string& key, const std::string& value);
  // Waits up to `wait` until every key is set and returns their values in order. Throws
  // kUnavailable naming the missing keys when the wait passes.
  std::vector<std::string> StoreGet(const std::string& node, const std::vector<std::string>& keys,
                                    std::chrono::milliseconds wait);

 private:
  // "coordinator (<endpoint>): <call>".
  std::string What(const char* call) const;
  void SetDeadline(grpc::ClientContext* context, std::chrono::milliseconds timeout) const;

  const std::string endpoint_;
  const CoordinatorClientOptions options_;
  std::unique_ptr<autodist::proto::Coordinator::Stub> stub_;
  std::mutex barrier_mutex_;
  // Barriers passed, by node and name (one client may speak for several nodes, as in tests).
  std::map<std::pair<std::string, std::string>, int64_t> barrier_generations_;
};

}  // namespace autodist::coordinator
