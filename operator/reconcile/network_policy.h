// The job's NetworkPolicy <job>: its pods accept connections only from the job's own pods (every
// port: the coordinator, parameter servers, and the ports Gloo and NCCL pick), from the operator
// (the coordinator's port, where it reads progress), and, when configured, from a metrics scraper
// (the runtime's metrics port). Everything else is refused where a policy controller runs; the API
// server stores policies whether one runs or not. docs/security.md explains what it leaves open.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "operator/reconcile/job_object.h"
#include "operator/reconcile/options.h"

namespace autodist::reconcile {

// `metrics_port` > 0: the pods serve /metrics on the port named "metrics".
nlohmann::json BuildNetworkPolicy(const JobRef& ref, const NetworkPolicyOptions& options,
                                  int metrics_port);

}  // namespace autodist::reconcile
