// Shared by the emulated-network tests: skipping where namespaces cannot be made, and checking
// that a network left nothing behind (no namespace still alive, no interface in ours).
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "launcher/netemu/emulated_network.h"

namespace autodist::netemu {

// GTEST_SKIP()s the calling test where this process cannot build an emulated network.
#define AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION()                                         \
  do {                                                                                    \
    std::string why_not;                                                                  \
    if (!::autodist::netemu::EmulationSupported(&why_not)) {                              \
      GTEST_SKIP() << "no network emulation here (needs root and iproute2): " << why_not; \
    }                                                                                     \
  } while (false)

// "net:[4026532...]" of a process; empty when it is gone (or a zombie, which has left its
// namespaces).
inline std::string NetNamespaceOf(pid_t pid) {
  std::error_code error;
  const auto target =
      std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/net", error);
  return error ? std::string() : target.string();
}

// The process ids under /proc.
inline std::vector<pid_t> AllProcesses() {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (const dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid > 0) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

// The children of `parent` (from /proc/<pid>/stat).
inline std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const pid_t pid : AllProcesses()) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) children.push_back(pid);
  }
  return children;
}

// The network namespaces some live process is in.
inline std::set<std::string> LiveNetNamespaces() {
  std::set<std::string> live;
  for (const pid_t pid : AllProcesses()) {
    if (std::string ns = NetNamespaceOf(pid); !ns.empty()) live.insert(ns);
  }
  return live;
}

// Waits up to `deadline` until no process is in any of `namespaces` and no interface named
// `device` is left in ours (the kernel removes a dead namespace's interfaces asynchronously);
// returns what is left, empty when nothing is.
inline std::vector<std::string> LeftBehind(
    const std::set<std::string>& namespaces, const std::string& device,
    std::chrono::seconds deadline = std::chrono::seconds(15)) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (true) {
    std::vector<std::string> left;
    const std::set<std::string> live = LiveNetNamespaces();
    for (const std::string& ns : namespaces) {
      if (live.contains(ns)) left.push_back("namespace " + ns);
    }
    if (!device.empty() && if_nametoindex(device.c_str()) != 0)
      left.push_back("interface " + device);
    if (left.empty() || std::chrono::steady_clock::now() > until) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace autodist::netemu
