#include "launcher/interrupt_guard.h"

#include <atomic>
#include <cerrno>
#include <cstring>

#include "launcher/live_process_groups.h"
#include "runtime/common/error.h"

namespace autodist::launcher {
namespace {

// Process-wide, like the handlers: a signal handler can reach nothing else.
std::atomic<bool> g_guard_alive{false};
std::atomic<int> g_first_signal{0};

static_assert(std::atomic<int>::is_always_lock_free, "signal handlers need lock-free atomics");

void OnInterrupt(int signal_number) {
  int none = 0;
  if (g_first_signal.compare_exchange_strong(none, signal_number)) return;
  // Second signal: nothing may be left behind even though nobody waits for the children.
  const int saved_errno = errno;
  detail::SignalLiveProcessGroups(SIGKILL);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
  // Delivered (fatally) as soon as this handler returns and unblocks it.
  raise(signal_number);
  errno = saved_errno;
}

}  // namespace

InterruptGuard::InterruptGuard() {
  bool alive = false;
  AD_CHECK(g_guard_alive.compare_exchange_strong(alive, true), kFailedPrecondition,
           "an InterruptGuard is already installed; only one may exist at a time");
  g_first_signal.store(0);
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  // SA_RESTART: a Ctrl-C must not make some unrelated read() in the launcher fail with EINTR.
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGINT, &action, &previous_interrupt_) != 0 ||
      sigaction(SIGTERM, &action, &previous_terminate_) != 0) {
    const int error = errno;
    sigaction(SIGINT, &previous_interrupt_, nullptr);
    g_guard_alive.store(false);
    Fail(ErrorCode::kInternal, "cannot install the Ctrl-C handler: {}", std::strerror(error));
  }
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_interrupt_, nullptr);
  sigaction(SIGTERM, &previous_terminate_, nullptr);
  g_guard_alive.store(false);
}

bool InterruptGuard::Requested() const { return g_first_signal.load() != 0; }

int InterruptGuard::Signal() const { return g_first_signal.load(); }

int InterruptGuard::ExitCode() const { return 128 + Signal(); }

}  // namespace autodist::launcher
