// InterruptGuard: the first SIGINT/SIGTERM only raises a flag; a second one kills every child's
// process group and then the launcher; the previous handlers come back afterwards.
#include "launcher/interrupt_guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>

#include "launcher/process_group.h"
#include "tests/launcher/launcher_test_util.h"

namespace autodist::launcher {
namespace {

std::atomic<int> g_custom_handler_calls{0};
void CountingHandler(int) { g_custom_handler_calls.fetch_add(1); }

TEST(InterruptGuardTest, TheFirstInterruptOnlySetsTheFlag) {
  InterruptGuard guard;
  EXPECT_FALSE(guard.Requested());
  EXPECT_EQ(guard.Signal(), 0);
  ASSERT_EQ(raise(SIGINT), 0);
  EXPECT_TRUE(guard.Requested());
  EXPECT_EQ(guard.Signal(), SIGINT);
  EXPECT_EQ(guard.ExitCode(), 130);
}

TEST(InterruptGuardTest, SigtermCountsAsAnInterrupt) {
  InterruptGuard guard;
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_TRUE(guard.Requested());
  EXPECT_EQ(guard.Signal(), SIGTERM);
  EXPECT_EQ(guard.ExitCode(), 143);
}

TEST(InterruptGuardTest, EachGuardStartsWithoutAnInterrupt) {
  {
    InterruptGuard guard;
    raise(SIGINT);
    EXPECT_TRUE(guard.Requested());
  }
  InterruptGuard guard;
  EXPECT_FALSE(guard.Requested());
}

TEST(InterruptGuardTest, OnlyOneGuardAtATime) {
  InterruptGuard guard;
  const Error error = ErrorOf([] { InterruptGuard second; });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(std::string(error.what()).find("already installed"), std::string::npos);
}

TEST(InterruptGuardTest, RestoresThePreviousHandlers) {
  struct sigaction counting {};
  counting.sa_handler = CountingHandler;
  sigemptyset(&counting.sa_mask);
  struct sigaction previous_int {};
  struct sigaction previous_term {};
  ASSERT_EQ(sigaction(SIGINT, &counting, &previous_int), 0);
  ASSERT_EQ(sigaction(SIGTERM, &counting, &previous_term), 0);
  g_custom_handler_calls = 0;
  {
    InterruptGuard guard;
    raise(SIGINT);
    EXPECT_EQ(g_custom_handler_calls.load(), 0);
  }
  raise(SIGINT);
  raise(SIGTERM);
  EXPECT_EQ(g_custom_handler_calls.load(), 2);
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

TEST(InterruptGuardDeathTest, ASecondInterruptKillsTheChildrenAndTheLauncher) {
  // "fast": the child is forked from this point (no other thread runs yet), so it shares `dir`.
  GTEST_FLAG_SET(death_test_style, "fast");
  TempDir dir;
  const std::string pid_file = dir / "child.pid";
  EXPECT_EXIT(
      {
        InterruptGuard guard;
        ProcessGroup group(dir / "logs");
        // Ignores SIGTERM, so only the SIGKILL of the second interrupt can end it.
        const pid_t child = group.Start(ProcessSpec{
            "stubborn", {"/bin/sh", "-c", "trap '' TERM; echo ready; exec sleep 1000"}, {}});
        std::ofstream(pid_file) << child << "\n";
        while (group.LastLines("stubborn", 1).empty()) usleep(10000);  // the trap is set
        raise(SIGINT);
        if (!guard.Requested()) _exit(3);
        raise(SIGINT);
        _exit(4);  // not reached
      },
      ::testing::KilledBySignal(SIGINT), "");
  const std::string text = ReadText(pid_file);
  ASSERT_FALSE(text.empty());
  const pid_t child = static_cast<pid_t>(std::stoi(text));
  EXPECT_TRUE(WaitUntilGone(child)) << "child " << child << " outlived the launcher";
}

}  // namespace
}  // namespace autodist::launcher
