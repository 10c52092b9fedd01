#include "operator/reconcile/service.h"

#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"

namespace autodist::reconcile {

nlohmann::json BuildService(const JobRef& ref, const JobMembers& members) {
  // With per-member ports the chief's (the coordinator's) is the one worth naming.
  const int port = members.chief().port;
  nlohmann::json spec = {
      {"clusterIP", "None"},
      {"publishNotReadyAddresses", true},
      {"selector", {{kJobNameLabel, ref.name}}},
      {"ports",
       nlohmann::json::array(
           {{{"name", kPortName}, {"port", port}, {"targetPort", port}, {"protocol", "TCP"}}})},
  };
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", ChildMetadata(ref, ServiceName(ref.name))},
          {"spec", std::move(spec)}};
}

}  // namespace autodist::reconcile
