#include "launcher/netemu/emulated_network.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "launcher/netemu/link_rate.h"
#include "runtime/common/error.h"

namespace autodist::netemu {
namespace {

constexpr size_t kMaxHosts = 250;  // .2 to .251 of one /24
constexpr int kSubnets = 256;      // 198.18.0.0/24 to 198.18.255.0/24
// tbf's bucket: 250 us of the rate, and at least 100 kB, about one and a half 64 KiB GSO packets.
// No more: a full bucket is a burst at line rate after each idle moment, which real links lack
// (with 1 ms, a 1 MB message crossed a 2.5 Gbit/s link 33% faster than its rate). No less: a
// bucket barely larger than one GSO packet loses tokens whenever tbf's timer fires late on busy
// cores (one GSO packet plus 2 kB, at 1 Gbit/s: four concurrent streams reached 60% of it).
constexpr double kMinimumBurstBytes = 100000;
constexpr double kBurstSeconds = 250e-6;
constexpr const char* kQueueLatency = "100ms";  // how long a packet may wait before tbf drops it

// Serializes the choice of a subnet between emulated networks on this machine: between reading
// the addresses in use and adding ours, no other process may pick the same one.
class SubnetLock {
 public:
  SubnetLock() {
    for (const char* path : {"/run/lock/autodist-netemu.lock", "/tmp/autodist-netemu.lock"}) {
      fd_ = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd_ >= 0) break;
    }
    AD_CHECK(fd_ >= 0, kUnavailable, "cannot open the emulated networks' lock file: {}",
             std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      AD_CHECK(errno == EINTR, kUnavailable, "cannot lock the emulated networks' lock file: {}",
               std::strerror(errno));
    }
  }
  ~SubnetLock() { ::close(fd_); }  // closing releases the lock
  SubnetLock(const SubnetLock&) = delete;
  SubnetLock& operator=(const SubnetLock&) = delete;

 private:
  int fd_ = -1;
};

// The third octets N of 198.18.N.x addresses on this namespace's interfaces.
std::set<int> SubnetsInUse() {
  std::set<int> used;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return used;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    const uint32_t host_order = ntohl(address->sin_addr.s_addr);
    if ((host_order >> 16U) == ((198U << 8U) | 18U))
      used.insert(static_cast<int>((host_order >> 8U) & 0xFFU));
  }
  ::freeifaddrs(list);
  return used;
}

int PickSubnet() {
  const std::set<int> used = SubnetsInUse();
  // Start from this process's id so that networks made at the same time tend to differ even
  // without the caller's route to tell them apart.
  const int start = static_cast<int>(::getpid() % kSubnets);
  for (int i = 0; i < kSubnets; ++i) {
    const int candidate = (start + i) % kSubnets;
    if (!used.contains(candidate)) return candidate;
  }
  Fail(ErrorCode::kFailedPrecondition,
       "every subnet of 198.18.0.0/16 is in use on this machine: no room for another emulated "
       "network");
}

void Ip(int ns_fd, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "ip");
  RunInNamespace(ns_fd, arguments);
}

void Tc(int ns_fd, std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "tc");
  RunInNamespace(ns_fd, arguments);
}

}  // namespace

EmulatedNetwork::EmulatedNetwork(NetworkOptions options) : options_(std::move(options)) {
  AD_CHECK(!options_.hosts.empty(), kInvalidArgument, "an emulated network needs hosts");
  AD_CHECK(options_.hosts.size() <= kMaxHosts, kInvalidArgument,
           "an emulated network holds at most {} hosts, not {}", kMaxHosts, options_.hosts.size());
  std::set<std::string> names;
  for (const std::string& host : options_.hosts) {
    AD_CHECK(names.insert(host).second, kInvalidArgument,
             "emulated network: host '{}' is named twice", host);
  }
  if (options_.latency_ms) {
    AD_CHECK(std::isfinite(*options_.latency_ms) && *options_.latency_ms > 0, kInvalidArgument,
             "emulated network: latency {} ms: expected a positive number of milliseconds",
             *options_.latency_ms);
    std::string why;
    AD_CHECK(NetemAvailable(&why), kFailedPrecondition,
             "emulated network: a latency needs tc's netem qdisc, which this kernel does not "
             "have ({}); leave the latency out to shape bandwidth only",
             why);
  }
  Build();
}

EmulatedNetwork::~EmulatedNetwork() {
  // The kernel removes a namespace's interfaces some time after its last process is gone; the
  // caller's end of its link is deleted now, so that the caller's namespace is as it was when
  // the destructor returns.
  if (caller_device_.empty()) return;
  try {
    Ip(-1, {"link", "del", caller_device_});
  } catch (const Error&) {
    // Already gone with the switch's namespace: nothing left to remove.
  }
}

void EmulatedNetwork::Build() {
  // The switch first: every host's veth is created inside it, so no interface ever exists in
  // the caller's namespace except the (optional) caller's own link.
  switch_ = std::make_unique<NetworkNamespace>("switch");
  const int bridge = switch_->fd();
  Ip(bridge, {"link", "set", "lo", "up"});
  Ip(bridge, {"link", "add", "br0", "type", "bridge"});
  Ip(bridge, {"link", "set", "br0", "up"});

  std::optional<SubnetLock> lock;
  if (options_.reach_from_caller) lock.emplace();
  const int subnet = PickSubnet();
  subnet_ = fmt::format("198.18.{}", subnet);

  for (size_t i = 0; i < options_.hosts.size(); ++i) {
    auto ns = std::make_unique<NetworkNamespace>(options_.hosts[i]);
    const std::string port = fmt::format("p{}", i);
    const std::string address = fmt::format("{}.{}", subnet_, i + 2);
    Ip(bridge, {"link", "add", port, "type", "veth", "peer", "name", "eth0", "netns",
                std::to_string(ns->holder())});
    Ip(bridge, {"link", "set", port, "master", "br0", "up"});
    Ip(ns->fd(), {"link", "set", "lo", "up"});
    Ip(ns->fd(), {"addr", "add", address + "/24", "dev", "eth0"});
    Ip(ns->fd(), {"link", "set", "eth0", "up"});
    Shape(ns->fd(), "eth0");  // what the host sends
    Shape(bridge, port);      // what the host receives
    hosts_.push_back(EmulatedHost{options_.hosts[i], address, ns.get()});
    namespaces_.push_back(std::move(ns));
  }

  if (options_.reach_from_caller) {
    caller_device_ = fmt::format("adn{}", subnet);
    caller_address_ = subnet_ + ".1";
    Ip(-1, {"link", "add", caller_device_, "type", "veth", "peer", "name", "uplink", "netns",
            std::to_string(switch_->holder())});
    Ip(-1, {"addr", "add", caller_address_ + "/24", "dev", caller_device_});
    Ip(-1, {"link", "set", caller_device_, "up"});
    Ip(bridge, {"link", "set", "uplink", "master", "br0", "up"});
  }
}

void EmulatedNetwork::Shape(int ns_fd, const std::string& device) const {
  const bool delay = options_.latency_ms.has_value();
  if (options_.bits_per_second) {
    const double bytes_per_second = static_cast<double>(*options_.bits_per_second) / 8;
    const auto burst =
        static_cast<int64_t>(std::max(kMinimumBurstBytes, bytes_per_second * kBurstSeconds));
    std::vector<std::string> tbf = {"qdisc", "add", "dev", device, "root"};
    if (delay) tbf.insert(tbf.end(), {"handle", "1:"});
    tbf.insert(tbf.end(), {"tbf", "rate", fmt::format("{}bit", *options_.bits_per_second), "burst",
                           std::to_string(burst), "latency", kQueueLatency});
    Tc(ns_fd, tbf);
  }
  if (delay) {
    const std::string half = fmt::format("{}us", std::llround(*options_.latency_ms * 500));
    std::vector<std::string> netem = {"qdisc", "add", "dev", device};
    if (options_.bits_per_second) {
      netem.insert(netem.end(), {"parent", "1:1", "handle", "10:"});
    } else {
      netem.emplace_back("root");
    }
    netem.insert(netem.end(), {"netem", "delay", half});
    Tc(ns_fd, netem);
  }
}

const EmulatedHost& EmulatedNetwork::Host(const std::string& name) const {
  const auto it = std::find_if(hosts_.begin(), hosts_.end(),
                               [&](const EmulatedHost& host) { return host.name == name; });
  AD_CHECK(it != hosts_.end(), kInternal, "emulated network has no host '{}'", name);
  return *it;
}

std::string EmulatedNetwork::Describe() const {
  std::string links =
      options_.bits_per_second
          ? fmt::format("links shaped to {} each way", FormatLinkRate(options_.bits_per_second))
          : std::string("links unshaped");
  if (options_.latency_ms) links += fmt::format(", {:g} ms one way", *options_.latency_ms);
  return fmt::format("{} hosts, each in its own network namespace on {}.0/24, {}", hosts_.size(),
                     subnet_, links);
}

bool EmulationSupported(std::string* why) {
  try {
    for (const char* program : {"ip", "tc"}) {
      AD_CHECK(!FindProgram(program).empty(), kNotFound,
               "'{}' is not installed (Debian package iproute2)", program);
    }
    const NetworkNamespace probe("probe");
    Ip(probe.fd(), {"link", "set", "lo", "up"});
    return true;
  } catch (const Error& error) {
    if (why != nullptr) *why = error.what();
    return false;
  }
}

bool NetemAvailable(std::string* why) {
  static const std::string* const verdict = [] {
    try {
      const NetworkNamespace probe("netem probe");
      Tc(probe.fd(), {"qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"});
      return new std::string();
    } catch (const Error& error) {
      return new std::string(error.what());
    }
  }();
  if (why != nullptr) *why = *verdict;
  return verdict->empty();
}

}  // namespace autodist::netemu
