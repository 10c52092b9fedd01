// The runtime's metric names, registered once per process: what every member of a job
// (autodist-runtime) serves on /metrics when --metrics-port is given. The families live in one
// process-wide registry, because the places that count (the training loop, the parameter-server
// service and store, the all-reduce groups, the clients of the servers) are layers apart and a
// process is one member. Updates are atomics, cheap enough to stay on without a server.
//
// Names follow Prometheus' conventions: the autodist_runtime_ prefix, base units (seconds,
// bytes) in the name, _total on counters. docs/observability.md lists them.
#pragma once

#include <string>

#include "runtime/observe/metrics.h"

namespace autodist::observe {

// Where bytes travel: the `channel` label of the byte counters.
inline constexpr const char* kParameterServerChannel = "parameter_server";
inline constexpr const char* kAllReduceChannel = "all_reduce";

struct RuntimeMetrics {
  RuntimeMetrics();

  Registry registry;
  // Workers: the training loop.
  Counter& steps;            // autodist_runtime_steps_total
  Histogram& step_duration;  // autodist_runtime_step_duration_seconds
  Counter& samples;          // autodist_runtime_samples_total
  Gauge& loss;               // autodist_runtime_loss: the last step's, mean over the replicas
  Gauge& learning_rate;      // autodist_runtime_learning_rate
  // Traffic: autodist_runtime_{sent,received}_bytes_total{channel}. Parameter-server bytes are
  // counted by both ends (a worker's pushes and pulls, a server's), all-reduce bytes by each
  // rank (the algorithm's share, as the communicator estimates it).
  Family<Counter>& sent_bytes;
  Family<Counter>& received_bytes;
  Counter& parameter_server_sent_bytes;
  Counter& parameter_server_received_bytes;
  Counter& all_reduce_sent_bytes;
  Counter& all_reduce_received_bytes;
  // Parameter servers: calls waiting for the other workers' contributions to a step (the
  // server's queue), and the optimizer's time per tensor update.
  Gauge& ps_waiting_calls;       // autodist_runtime_ps_waiting_calls
  Histogram& ps_apply_duration;  // autodist_runtime_ps_apply_duration_seconds
  Counter& ps_updates;           // autodist_runtime_ps_updates_total
  // All-reduce: one group's compression and collectives, per group.
  Family<Histogram>& all_reduce_duration;  // autodist_runtime_all_reduce_duration_seconds{group}
  // Which member this is: autodist_runtime_member_info{job,member,role} 1.
  Family<Gauge>& member_info;
};

// The process's metrics, made on first use.
RuntimeMetrics& ProcessMetrics();

// Records this process as `member` (worker-0, ps-1) of `job` in autodist_runtime_member_info.
void SetMemberInfo(const std::string& job, const std::string& member, const std::string& role);

// Observes the seconds from construction to destruction into `histogram`.
class ScopedDuration {
 public:
  explicit ScopedDuration(Histogram& histogram);
  ~ScopedDuration();
  ScopedDuration(const ScopedDuration&) = delete;
  ScopedDuration& operator=(const ScopedDuration&) = delete;

 private:
  Histogram& histogram_;
  long long start_ns_;
};

// Adds one for its lifetime to `gauge`.
class ScopedGaugeIncrement {
 public:
  explicit ScopedGaugeIncrement(Gauge& gauge) : gauge_(gauge) { gauge_.Inc(); }
  ~ScopedGaugeIncrement() { gauge_.Dec(); }
  ScopedGaugeIncrement(const ScopedGaugeIncrement&) = delete;
  ScopedGaugeIncrement& operator=(const ScopedGaugeIncrement&) = delete;

 private:
  Gauge& gauge_;
};

}  // namespace autodist::observe
