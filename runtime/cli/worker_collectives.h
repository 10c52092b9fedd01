// The collectives a worker's all-reduce runs on, chosen once per job and the same on every
// worker (each decides from the same plan, binary and gathered facts):
//
// * CPU workers, or GPU workers whose plan or machines NCCL cannot serve: one Gloo communicator of
//   the job's workers, in host memory (GPU replicas stage through it);
// * GPU workers otherwise: one NCCL rank per replica on its GPU, numbered by the job's global
//   replica index, so that the all-reduce stays on the GPUs (sync/device_all_reduce_part.h).
//
// Both meet through the coordinator's key-value store; NCCL's set-up adds a gather of every
// rank's GPU (host and PCI bus id) first, because NCCL refuses two ranks on one GPU, which is what
// `autodist run` gives a job asking for more GPUs than the machine has.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/collective/abort_list.h"
#include "runtime/collective/communicator.h"
#include "runtime/collective/registry.h"
#include "runtime/sync/replicator.h"
#include "runtime/sync/strategy_plan.h"
#include "runtime/tensor/device.h"

namespace autodist::cli {

// "replicas 0 and 1 share GPU 0000:3B:00.0 on host-a" for the first two entries of `devices`
// (one per rank, "<host>/<device identity>") that are equal; nullopt when all differ.
std::optional<std::string> SharedDevice(const std::vector<std::string>& devices);

// Set to 1 in a job's environment (every member inherits it from `autodist run`), CPU workers
// take the GPU workers' all-reduce path too (sync/device_all_reduce_part.h), with one Gloo rank
// per replica where a GPU job has an NCCL rank: the GPU path's ranks, start, fusion buffers,
// optimizer, evaluation and checkpoints, run by the CPU tests with several workers and replicas,
// which a one-GPU machine cannot. A test hook, not a tuning knob: on the CPU it is slower than the
// host path (more ranks, an optimizer per replica).
inline constexpr const char* kReplicaRanksOnCpuEnv = "AUTODIST_REPLICA_RANKS_ON_CPU";

// How a worker's all-reduce is carried, and the line that says so (empty: nothing to say).
struct CollectivesChoice {
  bool nccl = false;                // one NCCL rank per replica, on its GPU
  bool gloo_replica_ranks = false;  // one Gloo rank per replica, on the CPU (kReplicaRanksOnCpuEnv)
  std::string note;
};

// The choice for a worker whose replicas are on `devices` (the CPU, or GPUs), under `plan`
// (which all-reduces something). `nccl_built`: this binary has the "nccl" communicator.
// `gather_devices` gathers every rank's "<host>/<device identity>" (a collective: it is called
// on every worker or on none, as the earlier conditions are the same everywhere).
// `replica_ranks_on_cpu`: kReplicaRanksOnCpuEnv was set, the same for every worker.
CollectivesChoice ChooseCollectives(const sync::StrategyPlan& plan,
                                    const std::vector<tensor::Device>& devices, bool nccl_built,
                                    const std::function<std::vector<std::string>()>& gather_devices,
                                    bool replica_ranks_on_cpu = false);

struct WorkerCollectives {
  std::unique_ptr<collective::Communicator> workers;                // Gloo; null when unused
  std::vector<std::unique_ptr<collective::Communicator>> replicas;  // one rank per local replica
  // Each communicator above on the setup's abort list; declared after them, so destroyed first.
  std::vector<collective::AbortList::Entry> abort_entries;

  std::vector<collective::Communicator*> replica_pointers() const;
};

// What connecting needs besides the plan: `base` holds the rendezvous store, host, timeouts and
// the worker's rank among the workers; `make_store` a fresh store for each of a process's
// concurrent NCCL set-ups.
struct CollectivesSetup {
  collective::CommunicatorOptions base;
  std::function<std::shared_ptr<collective::RendezvousStore>()> make_store;
  sync::ReplicaPlacement placement;
  std::vector<tensor::Device> devices;  // of this worker's replicas
  // Wraps each communicator (the timeline's tracing); identity when null.
  std::function<std::unique_ptr<collective::Communicator>(
      std::unique_ptr<collective::Communicator>)>
      wrap;
  // Where every communicator connected is added, for the heartbeat to abort when the job fails;
  // none when null.
  collective::AbortList* abort_list = nullptr;
};

// Connects the collectives ChooseCollectives picks, printing its note through `print`. Nothing
// when the plan all-reduces nothing.
WorkerCollectives ConnectWorkerCollectives(const sync::StrategyPlan& plan,
                                           const CollectivesSetup& setup,
                                           const std::function<void(const std::string&)>& print);

}  // namespace autodist::cli
