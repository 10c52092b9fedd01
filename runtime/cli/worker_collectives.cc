#include "runtime/cli/worker_collectives.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <future>
#include <map>
#include <string_view>

#include "runtime/collective/rendezvous.h"
#include "runtime/common/error.h"
#include "runtime/exec/device_backend.h"
#include "runtime/sync/device_all_reduce_part.h"

namespace autodist::cli {
namespace {

constexpr const char* kNccl = "nccl";

bool NcclRequested(const sync::StrategyPlan& plan) {
  return std::any_of(plan.variables.begin(), plan.variables.end(), [](const auto& variable) {
    return std::any_of(variable.shards.begin(), variable.shards.end(),
                       [](const sync::ShardPlan& shard) { return shard.nccl_requested; });
  });
}

bool ReplicaRanksOnCpu() {
  const char* value = std::getenv(kReplicaRanksOnCpuEnv);
  return value != nullptr && std::string_view(value) == "1";
}

bool OnGpus(const std::vector<tensor::Device>& devices) {
  return !devices.empty() && std::none_of(devices.begin(), devices.end(),
                                          [](const tensor::Device& d) { return d.is_cpu(); });
}

std::string HostName() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "unknown-host";
  return name.data();
}

}  // namespace

std::optional<std::string> SharedDevice(const std::vector<std::string>& devices) {
  std::map<std::string, size_t> first;
  for (size_t rank = 0; rank < devices.size(); ++rank) {
    const auto [it, inserted] = first.emplace(devices[rank], rank);
    if (inserted) continue;
    const std::string& both = devices[rank];
    const size_t slash = both.find('/');
    const std::string host = slash == std::string::npos ? "" : both.substr(0, slash);
    const std::string device = slash == std::string::npos ? both : both.substr(slash + 1);
    return fmt::format("replicas {} and {} share GPU {} on {}", it->second, rank, device, host);
  }
  return std::nullopt;
}

CollectivesChoice ChooseCollectives(const sync::StrategyPlan& plan,
                                    const std::vector<tensor::Device>& devices, bool nccl_built,
                                    const std::function<std::vector<std::string>()>& gather_devices,
                                    bool replica_ranks_on_cpu) {
  const bool requested = NcclRequested(plan);
  if (!OnGpus(devices) && replica_ranks_on_cpu) {
    if (const std::optional<std::string> obstacle =
            sync::DeviceAllReduceObstacle(plan, tensor::DeviceKind::kCpu)) {
      Fail(ErrorCode::kInvalidArgument,
           "{} asks for the all-reduce on the replicas' devices, which this plan cannot take: {}",
           kReplicaRanksOnCpuEnv, *obstacle);
    }
    return {false, true,
            fmt::format("all-reduce: one Gloo rank per replica on the CPU, the GPU workers' path "
                        "({}=1)",
                        kReplicaRanksOnCpuEnv)};
  }
  if (!OnGpus(devices)) {
    return {false, false,
            requested ? "warning: all-reduce spec NCCL needs GPUs; this CPU run uses AUTO "
                        "(recursive doubling or halving-doubling, the ring for the largest "
                        "messages)"
                      : ""};
  }
  std::optional<std::string> obstacle = sync::DeviceAllReduceObstacle(plan, devices[0].kind);
  if (!obstacle && !nccl_built) {
    obstacle = "this build has no NCCL (the CUDA toolkit it was built with lacked nccl.h)";
  }
  if (!obstacle) {
    obstacle = SharedDevice(gather_devices());
    if (obstacle) *obstacle += ", and NCCL needs a GPU of its own for each rank";
  }
  if (obstacle) {
    return {false, false,
            fmt::format("{}all-reduce: GPU workers reduce through host memory with Gloo: {}",
                        requested ? "warning: all-reduce spec NCCL: " : "", *obstacle)};
  }
  return {true, false, "all-reduce: NCCL between the job's GPUs, one rank per replica"};
}

std::vector<collective::Communicator*> WorkerCollectives::replica_pointers() const {
  std::vector<collective::Communicator*> pointers;
  for (const auto& replica : replicas) pointers.push_back(replica.get());
  return pointers;
}

WorkerCollectives ConnectWorkerCollectives(const sync::StrategyPlan& plan,
                                           const CollectivesSetup& setup,
                                           const std::function<void(const std::string&)>& print) {
  WorkerCollectives out;
  if (!plan.has_all_reduce()) return out;
  const auto wrap = [&](std::unique_ptr<collective::Communicator> communicator) {
    return setup.wrap ? setup.wrap(std::move(communicator)) : std::move(communicator);
  };
  const std::vector<std::string> registered = collective::RegisteredCommunicators();
  const bool nccl_built =
      std::find(registered.begin(), registered.end(), kNccl) != registered.end();
  const sync::ReplicaPlacement& placement = setup.placement;
  const CollectivesChoice choice = ChooseCollectives(
      plan, setup.devices, nccl_built,
      [&] {
        const std::string host = HostName();
        std::vector<std::string> mine;
        for (const tensor::Device& device : setup.devices) {
          mine.push_back(host + "/" + exec::DeviceIdentity(device));
        }
        return collective::GatherFromEveryRank(
            *setup.base.rendezvous, "allreduce/gpus", placement.first_replica, mine,
            placement.total_replicas, setup.base.connect_timeout);
      },
      ReplicaRanksOnCpu());
  if (!choice.note.empty()) print(choice.note);
  const auto abort_on_failure = [&](collective::Communicator& communicator) {
    if (setup.abort_list != nullptr)
      out.abort_entries.push_back(setup.abort_list->Add(communicator));
  };
  if (!choice.nccl && !choice.gloo_replica_ranks) {
    out.workers = wrap(collective::MakeCommunicator("gloo", setup.base));
    abort_on_failure(*out.workers);
    return out;
  }
  // A rank per replica; their set-up waits for every rank: this worker's join at once, a thread
  // each.
  const char* backend = choice.nccl ? kNccl : "gloo";
  std::vector<std::future<std::unique_ptr<collective::Communicator>>> joining;
  for (int r = 0; r < placement.local_replicas; ++r) {
    collective::CommunicatorOptions options = setup.base;
    options.rank = placement.first_replica + r;
    options.size = placement.total_replicas;
    options.prefix = choice.nccl ? "allreduce-nccl" : "allreduce-replicas";
    options.device = setup.devices.empty() ? 0 : setup.devices[static_cast<size_t>(r)].index;
    options.rendezvous = setup.make_store ? setup.make_store() : setup.base.rendezvous;
    joining.push_back(std::async(std::launch::async, [options, backend] {
      return collective::MakeCommunicator(backend, options);
    }));
  }
  std::exception_ptr error;
  for (auto& future : joining) {
    try {
      out.replicas.push_back(wrap(future.get()));
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  for (const auto& replica : out.replicas) abort_on_failure(*replica);
  return out;
}

}  // namespace autodist::cli
