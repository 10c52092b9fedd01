// ProcessGroup with real child processes (/bin/sh scripts): exits and signals are reported, logs
// are complete and prefixed, stopping works on processes that resist it, and nothing is left
// behind: no zombie, no orphaned grandchild.
#include "launcher/process_group.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/launcher/launcher_test_util.h"

namespace autodist::launcher {
namespace {

using namespace std::chrono_literals;
using Lines = std::vector<std::string>;

ProcessSpec Sh(const std::string& name, const std::string& script) {
  return ProcessSpec{name, {"/bin/sh", "-c", script}, {}};
}

// The next exit, waiting generously; fails the test when none comes.
ProcessExit NextExit(ProcessGroup& group, std::chrono::milliseconds deadline = 60s) {
  std::optional<ProcessExit> exit = group.WaitAny(deadline);
  if (!exit) {
    ADD_FAILURE() << "no process exited within " << deadline.count() << " ms";
    return {};
  }
  return *exit;
}

// Waits until the process's output contains a line starting with `prefix`; returns that line.
std::string WaitForLine(const ProcessGroup& group, const std::string& name,
                        const std::string& prefix) {
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < until) {
    for (const std::string& line : group.LastLines(name, ProcessGroup::kKeptLines)) {
      if (line.rfind(prefix, 0) == 0) return line;
    }
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << name << " never printed a line starting with '" << prefix << "'";
  return "";
}

// The pid a script printed as "<prefix><pid>".
pid_t PidFromLine(const ProcessGroup& group, const std::string& name, const std::string& prefix) {
  const std::string line = WaitForLine(group, name, prefix);
  return line.empty() ? 0 : static_cast<pid_t>(std::stoi(line.substr(prefix.size())));
}

// A direct child that was reaped no longer exists at all (no zombie).
void ExpectReaped(pid_t pid) {
  errno = 0;
  EXPECT_EQ(kill(pid, 0), -1) << "process " << pid << " still exists";
  EXPECT_EQ(errno, ESRCH);
}

bool Contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

TEST(ProcessGroupTest, ReportsExitCodes) {
  TempDir dir;
  ProcessGroup group(dir / "logs");
  const pid_t pid = group.Start(Sh("worker-0", "exit 3"));
  const ProcessExit exit = NextExit(group);
  EXPECT_EQ(exit.name, "worker-0");
  EXPECT_EQ(exit.pid, pid);
  EXPECT_EQ(exit.exit_code, 3);
  EXPECT_EQ(exit.signal, 0);
  EXPECT_FALSE(exit.stopped);
  EXPECT_TRUE(exit.failed());
  EXPECT_EQ(DescribeExit(exit), "worker-0 exited with code 3");
  ExpectReaped(pid);
}

TEST(ProcessGroupTest, ASuccessfulExitIsNotAFailure) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("ps-0", "exit 0"));
  const ProcessExit exit = NextExit(group);
  EXPECT_EQ(exit.exit_code, 0);
  EXPECT_FALSE(exit.failed());
  EXPECT_EQ(DescribeExit(exit), "ps-0 exited normally");
}

TEST(ProcessGroupTest, ReportsTheSignalThatEndedAProcessByName) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  // SIGHUP rather than a crash signal: the same path, without leaving a core file behind.
  group.Start(Sh("worker-1", "echo about to crash; kill -HUP $$"));
  const ProcessExit exit = NextExit(group);
  EXPECT_EQ(exit.signal, SIGHUP);
  EXPECT_EQ(exit.exit_code, -1);
  EXPECT_TRUE(exit.failed());
  EXPECT_EQ(DescribeExit(exit), "worker-1 was killed by SIGHUP");
  EXPECT_EQ(FailureReport(exit, group.LogPath("worker-1"), group.LastLines("worker-1", 5)),
            "worker-1 was killed by SIGHUP; last lines of " + (dir / "worker-1.log") +
                ":\n  [worker-1] about to crash");
}

TEST(ProcessGroupTest, AProcessKilledFromOutsideIsReportedAsKilled) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("worker-2", "echo ready; exec sleep 1000"));
  WaitForLine(group, "worker-2", "ready");
  ASSERT_EQ(kill(group.Pid("worker-2"), SIGKILL), 0);
  const ProcessExit exit = NextExit(group);
  EXPECT_EQ(exit.name, "worker-2");
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_FALSE(exit.stopped);
}

TEST(ProcessGroupTest, LogFilesHoldEveryLinePrefixedIncludingAnUnterminatedLastLine) {
  TempDir dir;
  ProcessGroup group(dir / "nested/logs");
  group.Start(Sh("worker-0", "echo one; echo two >&2; printf three"));
  EXPECT_EQ(NextExit(group).exit_code, 0);
  EXPECT_EQ(group.LogPath("worker-0"), dir / "nested/logs/worker-0.log");
  EXPECT_EQ(ReadText(dir / "nested/logs/worker-0.log"),
            "[worker-0] one\n[worker-0] two\n[worker-0] three\n");
  EXPECT_EQ(group.LastLines("worker-0", 10), (Lines{"one", "two", "three"}));
}

TEST(ProcessGroupTest, LastLinesReturnsTheTail) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("ps-0", "i=1; while [ $i -le 300 ]; do echo line $i; i=$((i+1)); done"));
  EXPECT_EQ(NextExit(group).exit_code, 0);
  EXPECT_EQ(group.LastLines("ps-0", 3), (Lines{"line 298", "line 299", "line 300"}));
  const Lines kept = group.LastLines("ps-0", 1000);
  ASSERT_EQ(kept.size(), ProcessGroup::kKeptLines);
  EXPECT_EQ(kept.front(), "line 101");
  // The file has all of them.
  const std::string log = ReadText(group.LogPath("ps-0"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 300);
  EXPECT_TRUE(Contains(log, "[ps-0] line 1\n"));
}

TEST(ProcessGroupTest, LotsOfOutputNeverBlocksTheProcess) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  // ~3 MB: far more than a pipe holds, so the child finishes only if the pipe is drained.
  group.Start(
      ProcessSpec{"chatty", {"/bin/sh", "-c", "yes 0123456789abcdef | head -n 200000"}, {}});
  const ProcessExit exit = NextExit(group);
  EXPECT_EQ(exit.exit_code, 0);
  const std::string log = ReadText(group.LogPath("chatty"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 200000);
  EXPECT_EQ(log.size(), 200000u * std::string("[chatty] 0123456789abcdef\n").size());
}

TEST(ProcessGroupTest, EchoesEveryLineWithItsProcessName) {
  TempDir dir;
  std::mutex mutex;
  std::vector<std::string> echoed;
  ProcessGroup group(dir.path().string(), [&](std::string_view name, std::string_view line) {
    std::lock_guard lock(mutex);
    echoed.push_back(std::string(name) + ": " + std::string(line));
  });
  group.Start(Sh("worker-0", "echo hello; echo world"));
  NextExit(group);
  std::lock_guard lock(mutex);
  EXPECT_EQ(echoed, (Lines{"worker-0: hello", "worker-0: world"}));
}

TEST(ProcessGroupTest, EnvironmentIsInheritedWithAdditionsAndOverrides) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  ASSERT_EQ(setenv("AUTODIST_TEST_INHERITED", "from-launcher", 1), 0);
  ASSERT_EQ(setenv("AUTODIST_TEST_REPLACED", "old", 1), 0);
  ProcessSpec spec = Sh("worker-0",
                        "echo \"$AUTODIST_TEST_INHERITED $AUTODIST_TEST_REPLACED "
                        "$AUTODIST_ROLE\"");
  spec.env = {{"AUTODIST_TEST_REPLACED", "new"}, {"AUTODIST_ROLE", "worker"}};
  group.Start(spec);
  NextExit(group);
  EXPECT_EQ(group.LastLines("worker-0", 5), (Lines{"from-launcher new worker"}));
  unsetenv("AUTODIST_TEST_INHERITED");
  unsetenv("AUTODIST_TEST_REPLACED");
}

TEST(ProcessGroupTest, StandardInputIsEmpty) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("p", "if read line; then echo got input; else echo end of input; fi"));
  EXPECT_EQ(NextExit(group).exit_code, 0);
  EXPECT_EQ(group.LastLines("p", 5), (Lines{"end of input"}));
}

TEST(ProcessGroupTest, ChildrenStartWithDefaultSignalHandling) {
  TempDir dir;
  // The launcher ignores SIGUSR1 and blocks SIGUSR2; neither may carry over into a child (a
  // non-interactive shell cannot undo an ignored signal by itself).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previous {};
  ASSERT_EQ(sigaction(SIGUSR1, &ignore, &previous), 0);
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigset_t previous_mask;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &usr2, &previous_mask), 0);
  {
    ProcessGroup group(dir.path().string());
    group.Start(Sh("usr1", "kill -USR1 $$; sleep 5; echo survived"));
    group.Start(Sh("usr2", "kill -USR2 $$; sleep 5; echo survived"));
    for (int i = 0; i < 2; ++i) {
      const ProcessExit exit = NextExit(group);
      EXPECT_EQ(exit.signal, exit.name == "usr1" ? SIGUSR1 : SIGUSR2) << DescribeExit(exit);
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  sigaction(SIGUSR1, &previous, nullptr);
}

TEST(ProcessGroupTest, WaitAnyTimesOutWhileProcessesRun) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("sleeper", "exec sleep 1000"));
  EXPECT_FALSE(group.WaitAny(100ms).has_value());
  EXPECT_EQ(group.Running(), (Lines{"sleeper"}));
  EXPECT_FALSE(group.AllExited());
  const std::vector<ProcessExit> exits = group.TerminateAll(10s);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].signal, SIGTERM);
  EXPECT_TRUE(exits[0].stopped);
  EXPECT_EQ(DescribeExit(exits[0]), "sleeper was killed by SIGTERM after being asked to stop");
  EXPECT_TRUE(group.AllExited());
}

TEST(ProcessGroupTest, WaitAnyReturnsAtOnceWhenNothingRuns) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  // A hang here would hit ctest's timeout; the generous wait only bounds a broken build.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(group.WaitAny(600s).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 300s);
  EXPECT_TRUE(group.AllExited());
}

TEST(ProcessGroupTest, ExitsAreReturnedOnceInTheOrderTheyHappened) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  const std::string go = dir / "go";
  group.Start(Sh("second", "while [ ! -e " + go + " ]; do sleep 0.02; done; exit 2"));
  group.Start(Sh("first", "exit 1"));
  EXPECT_EQ(NextExit(group).name, "first");
  EXPECT_EQ(group.Running(), (Lines{"second"}));
  std::ofstream(go).put('\n');
  const ProcessExit second = NextExit(group);
  EXPECT_EQ(second.name, "second");
  EXPECT_EQ(second.exit_code, 2);
  EXPECT_FALSE(group.WaitAny(10ms).has_value());
  EXPECT_TRUE(group.AllExited());
  EXPECT_TRUE(group.Running().empty());
  EXPECT_TRUE(group.TerminateAll(1s).empty());
}

TEST(ProcessGroupTest, TerminateAllReturnsExitsNotYetReturned) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  const pid_t quick = group.Start(Sh("quick", "exit 4"));
  group.Start(Sh("slow", "exec sleep 1000"));
  ASSERT_TRUE(WaitUntilGone(quick));  // exited (maybe not reaped yet), so SIGTERM cannot hit it
  std::vector<ProcessExit> exits = group.TerminateAll(10s);
  ASSERT_EQ(exits.size(), 2u);
  std::sort(exits.begin(), exits.end(),
            [](const ProcessExit& a, const ProcessExit& b) { return a.name < b.name; });
  EXPECT_EQ(exits[0].name, "quick");
  EXPECT_EQ(exits[0].exit_code, 4);
  EXPECT_EQ(exits[1].name, "slow");
  EXPECT_EQ(exits[1].signal, SIGTERM);
  EXPECT_FALSE(group.WaitAny(10ms).has_value());
}

TEST(ProcessGroupTest, AProcessThatStopsCleanlyOnSigtermExitsNormally) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("graceful",
                 "trap 'echo stopping; exit 0' TERM; echo ready; "
                 "while :; do sleep 0.05; done"));
  WaitForLine(group, "graceful", "ready");
  const std::vector<ProcessExit> exits = group.TerminateAll(30s);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 0) << DescribeExit(exits[0]);
  EXPECT_TRUE(exits[0].stopped);
  EXPECT_FALSE(exits[0].failed());
  EXPECT_EQ(group.LastLines("graceful", 1), (Lines{"stopping"}));
}

TEST(ProcessGroupTest, TerminateAllKillsAProcessThatIgnoresSigterm) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  // The ignored SIGTERM is inherited by the background sleep too: both need SIGKILL.
  const pid_t pid = group.Start(
      Sh("stubborn", "trap '' TERM; sleep 1000 & echo child $!; echo ready; wait; wait"));
  const pid_t grandchild = PidFromLine(group, "stubborn", "child ");
  WaitForLine(group, "stubborn", "ready");
  ASSERT_GT(grandchild, 0);
  const std::vector<ProcessExit> exits = group.TerminateAll(300ms);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  EXPECT_TRUE(exits[0].stopped);
  ExpectReaped(pid);
  EXPECT_TRUE(WaitUntilGone(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(ProcessGroupTest, WhatAProcessStartedDiesWithIt) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("leader", "sleep 1000 & echo child $!; exit 0"));
  const ProcessExit exit = NextExit(group);
  EXPECT_EQ(exit.exit_code, 0);
  const pid_t grandchild = PidFromLine(group, "leader", "child ");
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(WaitUntilGone(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(ProcessGroupTest, TheDestructorStopsAndReapsEverything) {
  TempDir dir;
  pid_t pid = 0;
  pid_t grandchild = 0;
  {
    ProcessGroup group(dir.path().string());
    pid = group.Start(Sh("stubborn", "trap '' TERM; sleep 1000 & echo child $!; wait; wait"));
    grandchild = PidFromLine(group, "stubborn", "child ");
  }
  ASSERT_GT(grandchild, 0);
  ExpectReaped(pid);
  EXPECT_TRUE(WaitUntilGone(grandchild)) << "grandchild " << grandchild << " survived";
  EXPECT_TRUE(Contains(ReadText(dir / "stubborn.log"), "[stubborn] child "));
}

TEST(ProcessGroupTest, ChildrenDieWithTheLauncher) {
  TempDir dir;
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  // A stand-in launcher that dies without cleaning up (as if killed); the kernel's parent-death
  // signal must take its child along.
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    close(pipe_fds[0]);
    ProcessGroup* group = new ProcessGroup(dir.path().string());  // never destroyed: we "crash"
    const pid_t child = group->Start(ProcessSpec{"orphan", {"/bin/sleep", "1000"}, {}});
    if (write(pipe_fds[1], &child, sizeof child) != sizeof child) _exit(2);
    _exit(0);
  }
  close(pipe_fds[1]);
  pid_t child = 0;
  ASSERT_EQ(read(pipe_fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(launcher, &status, 0), launcher);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(WaitUntilGone(child)) << "child " << child << " outlived its launcher";
}

TEST(ProcessGroupTest, AMissingExecutableIsAClearError) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  const std::string missing = dir / "no-such-binary";
  const Error error = ErrorOf([&] { group.Start(ProcessSpec{"worker-0", {missing}, {}}); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_EQ(std::string(error.what()),
            "cannot start process 'worker-0': executable '" + missing + "' does not exist");
  EXPECT_TRUE(group.Running().empty());
  EXPECT_FALSE(group.WaitAny(10ms).has_value());
  // The group still works after a failed start.
  group.Start(Sh("worker-0", "exit 0"));
  EXPECT_EQ(NextExit(group).exit_code, 0);
}

TEST(ProcessGroupTest, ANonExecutableFileIsAClearError) {
  TempDir dir;
  ProcessGroup group(dir / "logs");
  const std::string script = dir / "script.txt";
  std::ofstream(script) << "echo hi\n";
  ASSERT_EQ(chmod(script.c_str(), 0644), 0);
  Error error = ErrorOf([&] { group.Start(ProcessSpec{"ps-0", {script}, {}}); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "process 'ps-0'")) << error.what();
  EXPECT_TRUE(Contains(error.what(), "'" + script + "' is not an executable file")) << error.what();

  error = ErrorOf([&] { group.Start(ProcessSpec{"ps-1", {dir.path().string()}, {}}); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "is not an executable file")) << error.what();
}

TEST(ProcessGroupTest, BadSpecsAreRejectedNamingTheProblem) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  Error error = ErrorOf([&] { group.Start(Sh("../escape", "exit 0")); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "process name '../escape' is invalid")) << error.what();

  error = ErrorOf([&] { group.Start(Sh("", "exit 0")); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);

  error = ErrorOf([&] { group.Start(ProcessSpec{"worker-0", {}, {}}); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "process 'worker-0' has no executable")) << error.what();

  ProcessSpec bad_env = Sh("worker-0", "exit 0");
  bad_env.env = {{"A=B", "c"}};
  error = ErrorOf([&] { group.Start(bad_env); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "environment variable name 'A=B'")) << error.what();

  group.Start(Sh("worker-0", "exit 0"));
  error = ErrorOf([&] { group.Start(Sh("worker-0", "exit 0")); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "two processes are named 'worker-0'")) << error.what();
  EXPECT_EQ(NextExit(group).name, "worker-0");
}

TEST(ProcessGroupTest, UnknownNamesAreNotFound) {
  TempDir dir;
  ProcessGroup group(dir.path().string());
  group.Start(Sh("worker-0", "exit 0"));
  const Error error = ErrorOf([&] { group.LastLines("worker-9", 5); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_EQ(std::string(error.what()),
            "no process named 'worker-9' was started (started: worker-0)");
  EXPECT_EQ(ErrorOf([&] { group.LogPath("ps-0"); }).code(), ErrorCode::kNotFound);
  EXPECT_EQ(ErrorOf([&] { group.Pid("ps-0"); }).code(), ErrorCode::kNotFound);
}

TEST(ProcessGroupTest, ALogDirectoryThatCannotBeCreatedIsAnError) {
  TempDir dir;
  const std::string file = dir / "a-file";
  std::ofstream(file) << "x";
  const Error error = ErrorOf([&] { ProcessGroup group(file + "/logs"); });
  EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(error.what(), "cannot create the log directory '" + file + "/logs'"))
      << error.what();
  EXPECT_EQ(ErrorOf([&] { ProcessGroup group(file); }).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace autodist::launcher
