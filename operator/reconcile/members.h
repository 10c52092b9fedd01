// The members of a job (worker 0 = the chief, which hosts the coordinator; then the other
// workers; then the parameter servers) with the pod each runs in and the address the others
// reach it at, as the reconciler's AddressPolicy decides, for one restart generation: every
// gang has pods, hosts (and, where members share a host, ports) of its own.
#pragma once

#include <string>
#include <vector>

#include "operator/reconcile/names.h"
#include "operator/reconcile/options.h"

namespace autodist::reconcile {

struct Member {
  Role role = Role::kWorker;
  int index = 0;     // within its role: the worker rank or the parameter-server number
  std::string node;  // the runtime's node name: worker-0, ps-1
  std::string pod;   // <job>-worker-0
  std::string host;  // where the others reach it
  int port = 0;      // where it listens (the chief: the coordinator too)

  std::string Endpoint() const;  // host:port
};

struct JobMembers {
  std::vector<Member> members;  // workers in rank order, then parameter servers
  int workers = 0;
  int parameter_servers = 0;

  const Member& chief() const { return members.front(); }
  // Where every member reaches the coordinator: the chief's endpoint.
  std::string Coordinator() const { return chief().Endpoint(); }
};

// The members of job `name` in `namespace_name` in restart generation `generation`. Throws
// InvalidArgument (naming spec.resources) when a per-member port policy has fewer ports per job
// than members.
JobMembers ListMembers(const std::string& name, const std::string& namespace_name, int workers,
                       int parameter_servers, const AddressPolicy& policy, int generation = 0);

}  // namespace autodist::reconcile
