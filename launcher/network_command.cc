#include <fmt/format.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "launcher/child_process.h"
#include "launcher/commands.h"
#include "launcher/interrupt_guard.h"
#include "launcher/netemu/emulated_network.h"
#include "launcher/netemu/link_rate.h"
#include "launcher/netemu/network_namespace.h"
#include "runtime/common/error.h"

namespace autodist::cli {
namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(20);

}  // namespace

int RunNetwork(const NetworkCommandOptions& options, std::ostream& err) {
  AD_CHECK(!options.command.empty(), kInvalidArgument,
           "autodist network: give the command to run after --");
  AD_CHECK(options.hosts >= 1, kInvalidArgument, "--hosts {}: expected at least 1", options.hosts);
  netemu::NetworkOptions network_options;
  for (int i = 0; i < options.hosts; ++i) network_options.hosts.push_back(fmt::format("h{}", i));
  network_options.bits_per_second = netemu::ParseLinkRate(options.rate, "--rate");
  if (options.latency_ms != 0) network_options.latency_ms = options.latency_ms;
  network_options.reach_from_caller = true;
  launcher::InterruptGuard interrupt;
  const netemu::EmulatedNetwork network(network_options);
  err << "autodist network: " << network.Describe() << std::endl;

  launcher::ProcessSpec spec;
  spec.name = "command";
  spec.argv = options.command;
  if (spec.argv[0].find('/') == std::string::npos) {
    const std::string found = netemu::FindProgram(spec.argv[0]);
    AD_CHECK(!found.empty(), kNotFound, "autodist network: command '{}' is not in PATH",
             spec.argv[0]);
    spec.argv[0] = found;
  }
  spec.share_output = true;
  spec.env["AUTODIST_NETWORK_HOSTS"] = std::to_string(network.hosts().size());
  spec.env["AUTODIST_NETWORK_CALLER"] = network.caller_address();
  for (size_t i = 0; i < network.hosts().size(); ++i) {
    spec.env[fmt::format("AUTODIST_NETWORK_ADDRESS_{}", i)] = network.hosts()[i].address;
    spec.env[fmt::format("AUTODIST_NETWORK_NETNS_{}", i)] = network.hosts()[i].ns->path();
  }
  const launcher::SpawnedChild child = launcher::SpawnChild(spec);
  // The command has its own process group (child_process.h): a Ctrl-C reaches only this
  // process, which passes it on and waits, so that the network outlives the command.
  bool forwarded = false;
  while (true) {
    int status = 0;
    const pid_t done = ::waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) return launcher::ShellExitCode(status);
    AD_CHECK(done == 0 || errno == EINTR, kInternal, "autodist network: waitpid: {}",
             std::strerror(errno));
    if (interrupt.Requested() && !forwarded) {
      ::kill(-child.pid, interrupt.Signal());
      forwarded = true;
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

}  // namespace autodist::cli
