// Ctrl-C handling for `autodist run`. While a guard lives, the first SIGINT or SIGTERM only sets
// a flag that the run loop polls (Requested()), so the launcher can stop every process in order
// and still print where their logs are. A second one is the user insisting: every child's
// process group is killed at once and the launcher dies of that signal.
#pragma once

#include <signal.h>

namespace autodist::launcher {

class InterruptGuard {
 public:
  // Installs the handlers for SIGINT and SIGTERM. Throws autodist::Error (FailedPrecondition)
  // when another guard is alive: the handlers are process-wide.
  InterruptGuard();
  // Restores the handlers that were installed before.
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // True once SIGINT or SIGTERM arrived.
  bool Requested() const;
  // The first signal that arrived (SIGINT or SIGTERM); 0 when none did.
  int Signal() const;
  // The exit code a shell expects from a program stopped by Signal(): 128 + the signal number.
  int ExitCode() const;

 private:
  struct sigaction previous_interrupt_ {};
  struct sigaction previous_terminate_ {};
};

}  // namespace autodist::launcher
