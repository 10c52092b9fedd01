#include "operator/kube/resource.h"

#include "operator/kube/url.h"

namespace autodist::kube {

std::string Resource::ApiVersion() const { return group.empty() ? version : group + "/" + version; }

std::string Resource::Name() const { return group.empty() ? plural : plural + "." + group; }

std::string Resource::Path(const std::string& ns, const std::string& name,
                           const std::string& subresource) const {
  std::string path = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) path += "/namespaces/" + PercentEncode(ns);
  path += "/" + plural;
  if (!name.empty()) {
    path += "/" + PercentEncode(name);
    if (!subresource.empty()) path += "/" + subresource;
  }
  return path;
}

}  // namespace autodist::kube
