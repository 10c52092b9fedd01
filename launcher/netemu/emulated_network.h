// An emulated network on one machine: every host in its own network namespace, each joined to
// one bridge by a veth pair whose two directions are shaped to the same rate with tc's
// token-bucket filter (tbf), as if each host had one full-duplex NIC of that speed on a
// non-blocking switch.
//
//   caller's namespace ── adn<N> ─┐ (unshaped; only with reach_from_caller)
//   host 0 ── eth0 ═ tbf ═ p0 ────┤
//   host 1 ── eth0 ═ tbf ═ p1 ────┼── br0, in a namespace of its own ("the switch")
//   ...                           │
//
// Addresses come from 198.18.0.0/15, the range RFC 2544 sets aside for benchmarking: subnet
// 198.18.<N>.0/24 with N free on this machine, the caller at .1 and host i at .(i + 2).
//
// Everything lives in namespaces held by this process (network_namespace.h), so it all goes
// away when the object is destroyed or the process dies, even by SIGKILL. Per-link latency
// needs tc's netem, which not every kernel has: NetemAvailable() says, and a latency without
// it is refused.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/netemu/network_namespace.h"

namespace autodist::netemu {

struct NetworkOptions {
  std::vector<std::string> hosts;          // one namespace each, in this order; unique names
  std::optional<int64_t> bits_per_second;  // each link, each direction; nullopt: unshaped
  // One-way delay added between any two hosts (half on each host's link), in milliseconds.
  std::optional<double> latency_ms;
  // Also join the caller's own namespace to the bridge (unshaped), so that this process can
  // reach the hosts; the route it adds is the only trace outside the namespaces.
  bool reach_from_caller = false;
};

struct EmulatedHost {
  std::string name;
  std::string address;  // IPv4, on eth0
  const NetworkNamespace* ns = nullptr;
};

class EmulatedNetwork {
 public:
  // Builds the network. Throws InvalidArgument for no hosts, more than 250 or repeated names,
  // FailedPrecondition without the privileges, without netem for a latency, or when ip/tc fail
  // (with their message), NotFound without iproute2. Call it on a thread that outlives the
  // network (network_namespace.h).
  explicit EmulatedNetwork(NetworkOptions options);
  ~EmulatedNetwork();
  EmulatedNetwork(const EmulatedNetwork&) = delete;
  EmulatedNetwork& operator=(const EmulatedNetwork&) = delete;

  const std::vector<EmulatedHost>& hosts() const { return hosts_; }
  // The host of that name; throws Internal for an unknown one.
  const EmulatedHost& Host(const std::string& name) const;
  // The caller's address on the network (with reach_from_caller), else empty.
  const std::string& caller_address() const { return caller_address_; }
  // One line: hosts, subnet, rate, latency.
  std::string Describe() const;

 private:
  void Build();
  void Shape(int ns_fd, const std::string& device) const;

  NetworkOptions options_;
  std::string subnet_;  // "198.18.<N>"
  std::string caller_address_;
  std::string caller_device_;
  std::unique_ptr<NetworkNamespace> switch_;
  std::vector<std::unique_ptr<NetworkNamespace>> namespaces_;
  std::vector<EmulatedHost> hosts_;
};

// Whether this kernel has tc's netem qdisc (checked once, in a scratch namespace). `why` gets
// tc's message when it does not. Requires what EmulatedNetwork requires; false without it.
bool NetemAvailable(std::string* why = nullptr);

// Whether this process may build an emulated network (it can create a network namespace and
// iproute2 is installed); `why` says what is missing.
bool EmulationSupported(std::string* why = nullptr);

}  // namespace autodist::netemu
