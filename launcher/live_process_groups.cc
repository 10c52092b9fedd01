#include "launcher/live_process_groups.h"

#include <array>
#include <atomic>
#include <csignal>

#include "runtime/common/error.h"

namespace autodist::launcher::detail {
namespace {

// A fixed table of lock-free slots (0 = empty): a signal handler may read it at any moment, so it
// can neither lock nor see a container being resized.
constexpr size_t kSlots = 4096;
std::array<std::atomic<pid_t>, kSlots> g_groups{};

static_assert(std::atomic<pid_t>::is_always_lock_free, "signal handlers need lock-free atomics");

}  // namespace

void RegisterLiveProcessGroup(pid_t group) {
  AD_CHECK(group > 0, kInternal, "process group id must be positive, got {}", group);
  for (std::atomic<pid_t>& slot : g_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, group)) return;
  }
  Fail(ErrorCode::kFailedPrecondition, "the launcher cannot track more than {} running processes",
       kSlots);
}

void UnregisterLiveProcessGroup(pid_t group) {
  for (std::atomic<pid_t>& slot : g_groups) {
    pid_t expected = group;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void SignalLiveProcessGroups(int signal) {
  for (const std::atomic<pid_t>& slot : g_groups) {
    const pid_t group = slot.load();
    if (group > 0) kill(-group, signal);
  }
}

}  // namespace autodist::launcher::detail
