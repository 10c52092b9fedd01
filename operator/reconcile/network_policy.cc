#include "operator/reconcile/network_policy.h"

#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"

namespace autodist::reconcile {
namespace {

nlohmann::json MatchLabels(const std::map<std::string, std::string>& labels) {
  nlohmann::json match = nlohmann::json::object();
  for (const auto& [key, value] : labels) match[key] = value;
  return {{"matchLabels", std::move(match)}};
}

nlohmann::json NamedPort(const char* name) { return {{"port", name}, {"protocol", "TCP"}}; }

}  // namespace

nlohmann::json BuildNetworkPolicy(const JobRef& ref, const NetworkPolicyOptions& options,
                                  int metrics_port) {
  const nlohmann::json job_pods = MatchLabels({{kJobNameLabel, ref.name}});
  nlohmann::json ingress = nlohmann::json::array();
  // Members reach one another on every port: Gloo's pairs and NCCL's sockets listen on ports
  // the kernel picks.
  ingress.push_back({{"from", nlohmann::json::array({{{"podSelector", job_pods}}})}});
  // The operator reads progress from the coordinator, on the member port ("autodist").
  nlohmann::json operator_peer = {{"podSelector", MatchLabels(options.operator_labels)}};
  operator_peer["namespaceSelector"] =
      options.operator_namespace.empty()
          ? nlohmann::json::object()  // any namespace
          : MatchLabels({{"kubernetes.io/metadata.name", options.operator_namespace}});
  ingress.push_back({{"from", nlohmann::json::array({operator_peer})},
                     {"ports", nlohmann::json::array({NamedPort(kPortName)})}});
  const bool scraper =
      !options.scraper_namespace_labels.empty() || !options.scraper_pod_labels.empty();
  if (metrics_port > 0 && scraper) {
    nlohmann::json peer = nlohmann::json::object();
    if (!options.scraper_namespace_labels.empty()) {
      peer["namespaceSelector"] = MatchLabels(options.scraper_namespace_labels);
    }
    if (!options.scraper_pod_labels.empty()) {
      peer["podSelector"] = MatchLabels(options.scraper_pod_labels);
    }
    ingress.push_back({{"from", nlohmann::json::array({peer})},
                       {"ports", nlohmann::json::array({NamedPort(kMetricsPortName)})}});
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", ChildMetadata(ref, NetworkPolicyName(ref.name))},
          {"spec",
           {{"podSelector", job_pods},
            {"policyTypes", nlohmann::json::array({"Ingress"})},
            {"ingress", std::move(ingress)}}}};
}

}  // namespace autodist::reconcile
