#include "runtime/observe/runtime_metrics.h"

#include <chrono>

namespace autodist::observe {
namespace {

long long NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// 100 µs .. about 107 s: a step of a small model on a laptop up to a large one on a slow link.
std::vector<double> StepBuckets() { return ExponentialBuckets(0.0001, 2, 21); }

}  // namespace

RuntimeMetrics::RuntimeMetrics()
    : steps(registry.AddCounter("autodist_runtime_steps_total", "Training steps taken").With()),
      step_duration(registry
                        .AddHistogram("autodist_runtime_step_duration_seconds",
                                      "Wall time of a training step", StepBuckets())
                        .With()),
      samples(registry.AddCounter("autodist_runtime_samples_total", "Training samples consumed")
                  .With()),
      loss(registry.AddGauge("autodist_runtime_loss", "Loss of the last step").With()),
      learning_rate(
          registry.AddGauge("autodist_runtime_learning_rate", "Learning rate of the last step")
              .With()),
      sent_bytes(registry.AddCounter("autodist_runtime_sent_bytes_total", "Payload bytes sent",
                                     {"channel"})),
      received_bytes(registry.AddCounter("autodist_runtime_received_bytes_total",
                                         "Payload bytes received", {"channel"})),
      parameter_server_sent_bytes(sent_bytes.With({kParameterServerChannel})),
      parameter_server_received_bytes(received_bytes.With({kParameterServerChannel})),
      all_reduce_sent_bytes(sent_bytes.With({kAllReduceChannel})),
      all_reduce_received_bytes(received_bytes.With({kAllReduceChannel})),
      ps_waiting_calls(registry
                           .AddGauge("autodist_runtime_ps_waiting_calls",
                                     "Parameter-server calls waiting for a step to complete")
                           .With()),
      ps_apply_duration(registry
                            .AddHistogram("autodist_runtime_ps_apply_duration_seconds",
                                          "Optimizer time of one parameter-server tensor update",
                                          ExponentialBuckets(0.00001, 2, 21))
                            .With()),
      ps_updates(registry
                     .AddCounter("autodist_runtime_ps_updates_total",
                                 "Parameter-server tensor updates applied")
                     .With()),
      all_reduce_duration(registry.AddHistogram(
          "autodist_runtime_all_reduce_duration_seconds",
          "Compression and collectives of one all-reduce group", StepBuckets(), {"group"})),
      member_info(registry.AddGauge("autodist_runtime_member_info",
                                    "This process's job, member and role (always 1)",
                                    {"job", "member", "role"})) {}

RuntimeMetrics& ProcessMetrics() {
  static RuntimeMetrics metrics;
  return metrics;
}

void SetMemberInfo(const std::string& job, const std::string& member, const std::string& role) {
  ProcessMetrics().member_info.With({job, member, role}).Set(1);
}

ScopedDuration::ScopedDuration(Histogram& histogram) : histogram_(histogram), start_ns_(NowNs()) {}

ScopedDuration::~ScopedDuration() {
  histogram_.Observe(static_cast<double>(NowNs() - start_ns_) * 1e-9);
}

}  // namespace autodist::observe
