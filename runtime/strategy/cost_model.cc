#include "runtime/strategy/cost_model.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "runtime/common/error.h"
#include "runtime/strategy/sharding.h"

namespace autodist::strategy {
namespace {

using autodist::proto::AllReduceSynchronizer;
using autodist::proto::PSSynchronizer;

constexpr double kIndexBytes = 8;      // int64 row or element index
constexpr double kTopKPairBytes = 12;  // int64 index + float32 value
constexpr double kDefaultTopKFraction = 0.01;
// Payload bytes per second of a link of `gbps`.
double PayloadBytesPerSecond(double gbps) { return gbps * 1e9 / 8 * kTcpPayloadFraction; }

std::string NodeOf(const std::string& device) { return device.substr(0, device.find(':')); }

// One variable or shard as the synchronizers move it.
struct Unit {
  const graph::Variable* variable = nullptr;
  std::vector<int64_t> shape;  // the shard's
  double elements = 0;
  double bytes = 0;        // float32 values of the whole unit
  double sparse_rows = 0;  // sparse: rows one replica's step touches in this unit
  double ready = 1;        // fraction of backward when its gradient is final
};

double RowBytes(const Unit& unit) {
  const double rows = unit.shape.empty() ? 1 : static_cast<double>(unit.shape[0]);
  return rows == 0 ? 0 : unit.bytes / rows;
}

// What a worker's replicas push of a sparse unit: unique rows, at most the unit's rows.
double SparseRowsOf(const Unit& unit, double replicas) {
  const double rows = unit.shape.empty() ? 1 : static_cast<double>(unit.shape[0]);
  return std::min(rows, unit.sparse_rows * replicas);
}

class Predictor {
 public:
  Predictor(const autodist::proto::Strategy& strategy,
            const std::vector<graph::Variable>& variables, const ResourceSpec& resources,
            const StepProfile& profile, const NetworkAssumptions& network,
            const OptimizerTraits& optimizer)
      : profile_(profile),
        network_(network),
        // Workers take rows in place only into variables they hold on the CPU.
        rows_pulled_(optimizer.sparse_updates_change_only_present_rows &&
                     resources.NumGpus() == 0) {
    for (const NodeSpec& node : resources.nodes()) {
      bandwidth_[node.address] =
          PayloadBytesPerSecond(node.network_bandwidth.value_or(network.default_gbps));
    }
    for (const std::string& replica : strategy.graph_config().replicas()) {
      const std::string node = NodeOf(replica);
      if (replicas_per_node_[node]++ == 0) workers_.push_back(node);
      ++total_replicas_;
    }
    std::unordered_map<std::string, const graph::Variable*> by_name;
    for (const graph::Variable& variable : variables) {
      by_name.emplace(variable.name, &variable);
      total_bytes_ += static_cast<double>(variable.bytes);
    }
    for (const auto& node : strategy.node_config()) {
      const auto it = by_name.find(node.var_name());
      AD_CHECK(it != by_name.end(), kInvalidArgument,
               "strategy node '{}' names no variable of the model", node.var_name());
      const graph::Variable& variable = *it->second;
      if (node.partitioner().empty()) {
        Place(node, MakeUnit(variable, variable.shape));
        continue;
      }
      const std::vector<int64_t> shards =
          ParsePartitioner(node.partitioner(), variable.shape, variable.name);
      for (int i = 0; i < node.part_config_size(); ++i) {
        Place(node.part_config(i), MakeUnit(variable, ShardShape(variable.shape, shards, i)));
      }
    }
  }

  StepPrediction Predict() {
    const double forward = profile_.forward_seconds;
    const double backward_end = forward + profile_.backward_seconds;
    const double all_reduce_end = AllReduceEnd(forward);
    const double ps_end = backward_end + ParameterServerSeconds();
    const double worker_update =
        total_bytes_ == 0 ? 0 : profile_.update_seconds * all_reduced_bytes_ / total_bytes_;
    StepPrediction prediction;
    // Compression runs on the worker's cores (or its GPU), which backward keeps busy: it delays
    // the step by its whole compute instead of hiding behind the wire. (On 2 cores shared by two
    // workers, TopK's selection overlapped with nothing: 28.8 ms measured on the CNN where an
    // overlapping model said 17.7.)
    prediction.compute_seconds =
        backward_end + worker_update + server_update_seconds_ + compress_seconds_;
    // All-reduce's own cost of a step exists only where workers synchronize by it; the
    // parameter servers' is their round, inside ps_end.
    const double overhead =
        Workers() > 1 && !groups_.empty() ? profile_.all_reduce_overhead_seconds : 0;
    prediction.total_seconds = std::max(std::max(backward_end, all_reduce_end) + overhead, ps_end) +
                               compress_seconds_ + worker_update;
    // The servers' update sits inside ps_end; it is compute all the same.
    prediction.communication_seconds =
        std::max(0.0, prediction.total_seconds - prediction.compute_seconds);
    for (const auto& [node, bytes] : link_bytes_) {
      prediction.link_bytes[node] = static_cast<int64_t>(std::llround(bytes));
    }
    prediction.collectives = collectives_;
    prediction.ps_rounds = ps_units_.empty() ? 0 : 1;
    return prediction;
  }

 private:
  struct Group {
    std::vector<std::pair<Unit, const AllReduceSynchronizer*>> units;
    double ready = 0;
  };
  struct PsUnit {
    Unit unit;
    std::string server;  // node
    const PSSynchronizer* synchronizer = nullptr;
  };

  Unit MakeUnit(const graph::Variable& variable, std::vector<int64_t> shape) const {
    Unit unit;
    unit.variable = &variable;
    unit.elements = static_cast<double>(graph::NumElements(shape));
    const auto full_elements = static_cast<double>(graph::NumElements(variable.shape));
    unit.bytes = full_elements == 0
                     ? 0
                     : static_cast<double>(variable.bytes) * unit.elements / full_elements;
    if (variable.sparse) {
      const auto rows = profile_.sparse_rows.find(variable.name);
      const double touched = rows == profile_.sparse_rows.end() ? 0 : rows->second;
      const double all_rows = variable.shape.empty() ? 1 : static_cast<double>(variable.shape[0]);
      const double unit_rows = shape.empty() ? 1 : static_cast<double>(shape[0]);
      unit.sparse_rows = all_rows == 0 ? 0 : touched * unit_rows / all_rows;
    }
    const auto ready = profile_.ready_fraction.find(variable.name);
    unit.ready = ready == profile_.ready_fraction.end() ? 1.0 : ready->second;
    unit.shape = std::move(shape);
    return unit;
  }

  void Place(const autodist::proto::Strategy::Node& node, Unit unit) {
    if (node.has_pssynchronizer()) {
      ps_units_.push_back({std::move(unit), NodeOf(node.pssynchronizer().reduction_destination()),
                           &node.pssynchronizer()});
    } else if (node.has_allreducesynchronizer()) {
      all_reduced_bytes_ += unit.bytes;
      Group& group = groups_[node.allreducesynchronizer().group()];
      group.ready = std::max(group.ready, unit.ready);
      group.units.emplace_back(std::move(unit), &node.allreducesynchronizer());
    }
  }

  double Workers() const { return static_cast<double>(workers_.size()); }

  double SlowestWorkerLink() const {
    double slowest = PayloadBytesPerSecond(network_.default_gbps);
    bool first = true;
    for (const std::string& worker : workers_) {
      const double rate = Bandwidth(worker);
      slowest = first ? rate : std::min(slowest, rate);
      first = false;
    }
    return slowest;
  }

  // What a collective moves per second on each rank's link, sending and receiving at once.
  double CollectiveBytesPerSecond() const {
    return SlowestWorkerLink() * profile_.duplex_efficiency;
  }

  double Bandwidth(const std::string& node) const {
    const auto it = bandwidth_.find(node);
    return it == bandwidth_.end() ? PayloadBytesPerSecond(network_.default_gbps) : it->second;
  }

  // A ring all-reduce of `bytes` per rank: its time, and each worker link's traffic.
  double RingAllReduce(double bytes) {
    ++collectives_;
    const double w = Workers();
    if (w <= 1) return profile_.collective_seconds;
    const double moved = 2 * (w - 1) / w * bytes;
    for (const std::string& worker : workers_) link_bytes_[worker] += 2 * moved;
    return moved / CollectiveBytesPerSecond() + 2 * (w - 1) * network_.latency_seconds +
           profile_.collective_seconds;
  }

  // An all-gather where every rank contributes `bytes`.
  double AllGather(double bytes) {
    ++collectives_;
    const double w = Workers();
    if (w <= 1) return profile_.collective_seconds;
    const double moved = (w - 1) * bytes;
    for (const std::string& worker : workers_) link_bytes_[worker] += 2 * moved;
    return moved / CollectiveBytesPerSecond() + (w - 1) * network_.latency_seconds +
           profile_.collective_seconds;
  }

  // An all-gather of varying size (Communicator::AllGatherV): an exchange of the counts, as small
  // as a collective gets, then the data.
  double AllGatherV(double bytes) {
    ++collectives_;
    return profile_.collective_seconds + (Workers() - 1) * network_.latency_seconds +
           AllGather(bytes);
  }

  // Compression's compute, charged to the worker's cores (see Predict): `elements` float32
  // elements compressed and decompressed by `compressor` (the profile keys it by enum name).
  void ChargeCompression(AllReduceSynchronizer::Compressor compressor, double elements) {
    const auto it = profile_.compress_seconds_per_element.find(
        AllReduceSynchronizer::Compressor_Name(compressor));
    if (it != profile_.compress_seconds_per_element.end()) {
      compress_seconds_ += it->second * elements;
    }
  }

  // One fusion group's collectives; its compression is charged to the cores.
  double GroupSeconds(const Group& group) {
    const AllReduceSynchronizer& first = *group.units.front().second;
    const double local_replicas =
        workers_.empty() ? 1 : static_cast<double>(replicas_per_node_[workers_.front()]);
    double seconds = 0;
    double dense_bytes = 0;
    double dense_elements = 0;
    for (const auto& [unit, synchronizer] : group.units) {
      if (unit.variable->sparse) {
        // Indices and rows, each an all-gather of varying size.
        const double rows = SparseRowsOf(unit, local_replicas);
        seconds += AllGatherV(rows * kIndexBytes) + AllGatherV(rows * RowBytes(unit));
        continue;
      }
      dense_bytes += unit.bytes;
      dense_elements += unit.elements;
    }
    if (dense_elements == 0) return seconds;
    switch (first.compressor()) {
      case AllReduceSynchronizer::HorovodCompressor:
      case AllReduceSynchronizer::HorovodCompressorEF:
        ChargeCompression(first.compressor(), dense_elements);
        return seconds + RingAllReduce(dense_bytes / 2);
      case AllReduceSynchronizer::TopKCompressorEF: {
        const double fraction =
            first.topk_fraction() > 0 ? first.topk_fraction() : kDefaultTopKFraction;
        const double k = std::ceil(fraction * dense_elements);
        // Indices and values: two all-gathers of k elements per rank.
        ChargeCompression(first.compressor(), dense_elements);
        return seconds + AllGather(k * kIndexBytes) + AllGather(k * (kTopKPairBytes - kIndexBytes));
      }
      case AllReduceSynchronizer::PowerSGDCompressor:
        return seconds + PowerSgdSeconds(group, first);
      default:
        return seconds + RingAllReduce(dense_bytes);
    }
  }

  // PowerSGD's two factor all-reduces and the fused all-reduce of what it leaves uncompressed
  // (powersgd_compressor.h).
  double PowerSgdSeconds(const Group& group, const AllReduceSynchronizer& first) {
    const double rank = first.powersgd_rank() > 0 ? first.powersgd_rank() : 1;
    double p_bytes = 0;
    double q_bytes = 0;
    double plain_bytes = 0;
    double compressed_elements = 0;
    for (const auto& [unit, synchronizer] : group.units) {
      if (unit.variable->sparse) continue;
      const double n = unit.shape.size() >= 2 ? static_cast<double>(unit.shape[0]) : 0;
      const double m = n > 0 ? unit.elements / n : 0;
      const bool compressed =
          unit.shape.size() >= 2 && rank * (n + m) < n * m &&
          unit.elements >= static_cast<double>(first.min_compression_elements());
      if (!compressed) {
        plain_bytes += unit.bytes;
        continue;
      }
      p_bytes += rank * n * 4;
      q_bytes += rank * m * 4;
      compressed_elements += unit.elements;
    }
    ChargeCompression(AllReduceSynchronizer::PowerSGDCompressor, compressed_elements * rank);
    double seconds = 0;
    if (p_bytes > 0) seconds += RingAllReduce(p_bytes) + RingAllReduce(q_bytes);
    if (plain_bytes > 0) seconds += RingAllReduce(plain_bytes);
    return seconds;
  }

  // When the last collective ends: groups in the order they complete, on one thread. Until
  // backward ends a collective goes at the profile's overlap efficiency (step_profile.h).
  double AllReduceEnd(double forward) {
    std::vector<const Group*> order;
    for (const auto& [id, group] : groups_) order.push_back(&group);
    std::stable_sort(order.begin(), order.end(),
                     [](const Group* a, const Group* b) { return a->ready < b->ready; });
    const double backward_end = forward + profile_.backward_seconds;
    const double efficiency = profile_.overlap_efficiency;
    double end = 0;
    for (const Group* group : order) {
      const double start = std::max(end, forward + group->ready * profile_.backward_seconds);
      const double seconds = GroupSeconds(*group);
      // What the collective gets done beside backward, at the efficiency; the rest after it.
      const double beside_backward = std::max(0.0, backward_end - start) * efficiency;
      end = seconds <= beside_backward ? start + seconds / efficiency
                                       : std::max(start, backward_end) + seconds - beside_backward;
    }
    return end;
  }

  // Push, the servers' update, pull: each phase as long as its busiest link needs. Links are
  // full duplex: a node's sending and its receiving in one phase do not add up.
  double ParameterServerSeconds() {
    if (ps_units_.empty()) return 0;
    Traffic push;
    Traffic pull;
    std::map<std::string, double> hosted;
    for (const PsUnit& entry : ps_units_) {
      hosted[entry.server] += entry.unit.bytes;
      const bool proxy = entry.synchronizer->local_replication();
      for (const std::string& worker : workers_) {
        if (worker == entry.server) continue;  // same node: no link crossed
        const double replicas = replicas_per_node_[worker];
        const double pushes = proxy ? 1 : replicas;
        const double pushed = pushes * PushBytes(entry, proxy ? replicas : 1);
        const double pulled = pushes * PullBytes(entry.unit);
        push.sent[worker] += pushed;
        push.received[entry.server] += pushed;
        pull.sent[entry.server] += pulled;
        pull.received[worker] += pulled;
      }
    }
    for (const auto& [server, bytes] : hosted) {
      const double update = total_bytes_ == 0 ? 0 : profile_.update_seconds * bytes / total_bytes_;
      server_update_seconds_ = std::max(server_update_seconds_, update);
    }
    for (const PsUnit& entry : ps_units_) ChargePushCompression(entry);
    // The round's serving work hides part of the wire (step_profile.h).
    const double wire = PhaseSeconds(push) + PhaseSeconds(pull);
    return profile_.ps_wire_share * wire + server_update_seconds_ + profile_.ps_round_seconds +
           2 * network_.latency_seconds;
  }

  struct Traffic {
    std::map<std::string, double> sent;
    std::map<std::string, double> received;
  };

  // The busiest link's time in one phase; counts every node's bytes into link_bytes_. Where a
  // node both sends and receives, the bytes that cross in both directions at once go at the
  // duplex efficiency, the rest of the larger direction at the payload rate.
  double PhaseSeconds(const Traffic& traffic) {
    double seconds = 0;
    for (const auto* direction : {&traffic.sent, &traffic.received}) {
      const auto* other = direction == &traffic.sent ? &traffic.received : &traffic.sent;
      for (const auto& [node, bytes] : *direction) {
        const auto reverse = other->find(node);
        const double both_ways = reverse == other->end() ? 0 : std::min(bytes, reverse->second);
        const double rate = Bandwidth(node);
        seconds = std::max(
            seconds, both_ways / (rate * profile_.duplex_efficiency) + (bytes - both_ways) / rate);
        link_bytes_[node] += bytes;
      }
    }
    return seconds;
  }

  // One pull of `unit`: its value, or for a sparse table whose absent rows stay as they are, the
  // rows the step's replicas touched with their indices, when those are fewer bytes (the server
  // sends whichever is smaller).
  double PullBytes(const Unit& unit) const {
    const std::vector<int64_t>& whole = unit.variable->shape;
    // Only a table whole or cut along its rows takes rows (sync/ps_part.h).
    const bool along_rows = unit.shape.size() == whole.size() && !whole.empty() &&
                            std::equal(unit.shape.begin() + 1, unit.shape.end(), whole.begin() + 1);
    if (!unit.variable->sparse || !rows_pulled_ || !along_rows) return unit.bytes;
    const double rows = SparseRowsOf(unit, total_replicas_);
    return std::min(unit.bytes, rows * (RowBytes(unit) + kIndexBytes));
  }

  // One push of `entry` covering `replicas` replicas' gradients.
  double PushBytes(const PsUnit& entry, double replicas) const {
    const Unit& unit = entry.unit;
    if (unit.variable->sparse) {
      const double rows = SparseRowsOf(unit, replicas);
      return rows * (RowBytes(unit) + kIndexBytes);
    }
    switch (entry.synchronizer->compressor()) {
      case AllReduceSynchronizer::HorovodCompressor:
      case AllReduceSynchronizer::HorovodCompressorEF:
        return unit.bytes / 2;
      case AllReduceSynchronizer::TopKCompressorEF: {
        const double fraction = entry.synchronizer->topk_fraction() > 0
                                    ? entry.synchronizer->topk_fraction()
                                    : kDefaultTopKFraction;
        return std::ceil(fraction * unit.elements) * kTopKPairBytes;
      }
      default:
        return unit.bytes;
    }
  }

  // A push compresses with float16 or TopK (PushBytes); sparse rows go as they are.
  void ChargePushCompression(const PsUnit& entry) {
    const AllReduceSynchronizer::Compressor compressor = entry.synchronizer->compressor();
    if (entry.unit.variable->sparse || compressor == AllReduceSynchronizer::NoneCompressor ||
        compressor == AllReduceSynchronizer::PowerSGDCompressor) {
      return;
    }
    ChargeCompression(compressor, entry.unit.elements);
  }

  const StepProfile& profile_;
  const NetworkAssumptions& network_;
  bool rows_pulled_ = false;  // sparse tables' pulls are the changed rows (PullBytes)
  std::map<std::string, double> bandwidth_;  // node -> bytes per second
  double total_replicas_ = 0;
  std::vector<std::string> workers_;  // nodes with replicas, in replica order
  std::map<std::string, int> replicas_per_node_;
  std::map<int, Group> groups_;
  std::vector<PsUnit> ps_units_;
  double total_bytes_ = 0;
  double all_reduced_bytes_ = 0;
  double server_update_seconds_ = 0;
  double compress_seconds_ = 0;
  int collectives_ = 0;
  std::map<std::string, double> link_bytes_;
};

}  // namespace

std::pair<std::string, int64_t> StepPrediction::BusiestLink() const {
  std::pair<std::string, int64_t> busiest;
  for (const auto& [node, bytes] : link_bytes) {
    if (bytes > busiest.second) busiest = {node, bytes};
  }
  return busiest;
}

StepPrediction PredictStep(const autodist::proto::Strategy& strategy,
                           const std::vector<graph::Variable>& variables,
                           const ResourceSpec& resources, const StepProfile& profile,
                           const NetworkAssumptions& network, const OptimizerTraits& optimizer) {
  Predictor predictor(strategy, variables, resources, profile, network, optimizer);
  return predictor.Predict();
}

}  // namespace autodist::strategy
