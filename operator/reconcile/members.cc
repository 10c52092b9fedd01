#include "operator/reconcile/members.h"

#include <fmt/format.h>

#include <cstdint>

#include "runtime/common/error.h"

namespace autodist::reconcile {
namespace {

// FNV-1a: a stable hash (std::hash may differ between builds), so ports survive an upgrade.
uint64_t StableHash(const std::string& text) {
  uint64_t hash = 14695981039346656037ULL;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

int PortBase(const std::string& name, const std::string& namespace_name, int members,
             const AddressPolicy& policy) {
  if (policy.ports == AddressPolicy::Ports::kFixed) return policy.port;
  AD_CHECK(members <= policy.port_slot_size, kInvalidArgument,
           "spec.resources: the job's {} pods need {} ports, more than the operator gives one job "
           "on a shared host ({})",
           members, members, policy.port_slot_size);
  const uint64_t slots = static_cast<uint64_t>((policy.port_range_end - policy.port_range_begin) /
                                               policy.port_slot_size);
  const uint64_t slot = StableHash(namespace_name + "/" + name) % slots;
  return policy.port_range_begin + static_cast<int>(slot) * policy.port_slot_size;
}

}  // namespace

std::string Member::Endpoint() const { return fmt::format("{}:{}", host, port); }

JobMembers ListMembers(const std::string& name, const std::string& namespace_name, int workers,
                       int parameter_servers, const AddressPolicy& policy, int generation) {
  JobMembers out;
  out.workers = workers;
  out.parameter_servers = parameter_servers;
  const std::string name_space = namespace_name.empty() ? "default" : namespace_name;
  const int count = workers + parameter_servers;
  const int base = PortBase(name, name_space, count, policy);
  const auto add = [&](Role role, int index) {
    Member member;
    member.role = role;
    member.index = index;
    member.node = NodeName(role, index);
    member.pod = PodName(name, role, index, generation);
    std::string host = ReplaceAll(policy.host_template, "{pod}", member.pod);
    host = ReplaceAll(host, "{service}", ServiceName(name));
    host = ReplaceAll(host, "{namespace}", name_space);
    member.host = ReplaceAll(host, "{job}", name);
    const int ordinal = static_cast<int>(out.members.size());
    // Members sharing a host: each gang takes the next `count` ports of the job's slot (round
    // and round), so a new gang never waits for the old one's listeners to close; two gangs in
    // a row overlap only when the job has more members than half a slot.
    const int64_t offset =
        (ordinal + static_cast<int64_t>(generation) * count) % policy.port_slot_size;
    member.port =
        policy.ports == AddressPolicy::Ports::kFixed ? base : base + static_cast<int>(offset);
    out.members.push_back(std::move(member));
  };
  for (int i = 0; i < workers; ++i) add(Role::kWorker, i);
  for (int i = 0; i < parameter_servers; ++i) add(Role::kParameterServer, i);
  return out;
}

}  // namespace autodist::reconcile
