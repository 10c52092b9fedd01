// The process groups of every child the launcher has started and not yet reaped, kept where a
// signal handler can reach them: a second Ctrl-C (InterruptGuard) kills them all before the
// launcher dies, so no child outlives it even when it cannot wait for them.
#pragma once

#include <sys/types.h>

namespace autodist::launcher::detail {

// Records a process group; throws autodist::Error (FailedPrecondition) when the table is full.
void RegisterLiveProcessGroup(pid_t group);

// Forgets a process group. Call before reaping its leader, so the id cannot be reused while it is
// still recorded.
void UnregisterLiveProcessGroup(pid_t group);

// Sends `signal` to every recorded process group. Async-signal-safe.
void SignalLiveProcessGroups(int signal);

}  // namespace autodist::launcher::detail
