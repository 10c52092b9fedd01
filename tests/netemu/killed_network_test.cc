// A harness killed with SIGKILL mid-run leaves no namespace, veth or qdisc behind: `autodist
// network` holding three hosts is killed while its command runs, then nothing of its network may
// remain. (`autodist run --network` killed mid-training: tests/launcher/run_network_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/launcher/launcher_test_util.h"
#include "tests/netemu/netemu_test_util.h"

extern char** environ;  // NOLINT: POSIX declares it nowhere in a header

namespace autodist::netemu {
namespace {

using launcher::ReadText;
using launcher::TempDir;

pid_t Spawn(const std::vector<std::string>& argv) {
  std::vector<char*> pointers;
  for (const std::string& arg : argv) pointers.push_back(const_cast<char*>(arg.c_str()));
  pointers.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, pointers[0], nullptr, nullptr, pointers.data(), environ), 0);
  return pid;
}

TEST(KilledNetworkTest, AKilledHarnessLeavesNoNamespaceInterfaceOrQdisc) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  TempDir dir;
  const std::string ready = dir / "ready";
  const pid_t harness = Spawn({std::string(AUTODIST_BIN_DIR) + "/autodist", "network", "--hosts",
                               "3", "--rate", "1gbit", "--", "/bin/sh", "-c",
                               "echo \"$AUTODIST_NETWORK_CALLER $$\" > " + ready + ".tmp && mv " +
                                   ready + ".tmp " + ready + " && exec sleep 60"});
  ASSERT_GT(harness, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!std::filesystem::exists(ready) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(std::filesystem::exists(ready)) << "autodist network did not start its command";
  std::istringstream said(ReadText(ready));
  std::string caller;
  pid_t command = 0;
  said >> caller >> command;
  const std::string device = "adn" + caller.substr(7, caller.rfind('.') - 7);

  // The holders are the harness's children in other namespaces than ours: the switch and 3 hosts.
  const std::string ours = NetNamespaceOf(::getpid());
  std::set<std::string> namespaces;
  for (const pid_t child : ChildrenOf(harness)) {
    if (const std::string ns = NetNamespaceOf(child); !ns.empty() && ns != ours) {
      namespaces.insert(ns);
    }
  }
  EXPECT_EQ(namespaces.size(), 4U);
  EXPECT_NE(if_nametoindex(device.c_str()), 0U) << device;

  ASSERT_EQ(::kill(harness, SIGKILL), 0);
  int status = 0;
  ::waitpid(harness, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  // Interfaces and qdiscs live inside the namespaces (and the caller's veth end dies with its
  // peer): no namespace left means none of them is.
  EXPECT_THAT(LeftBehind(namespaces, device), ::testing::IsEmpty());
  // The command heard of its harness's death (PR_SET_PDEATHSIG) and ended too.
  EXPECT_TRUE(launcher::WaitUntilGone(command, std::chrono::seconds(10)));
}

TEST(KilledNetworkTest, TheCommandsExitCodeIsTheHarnesss) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  const pid_t harness = Spawn({std::string(AUTODIST_BIN_DIR) + "/autodist", "network", "--",
                               "/bin/sh", "-c", "test \"$AUTODIST_NETWORK_HOSTS\" = 2 && exit 7"});
  int status = 0;
  ::waitpid(harness, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

}  // namespace
}  // namespace autodist::netemu
