// The communicators a process breaks when its job fails. The heartbeat learns of the failure on
// its own thread (a peer died, or this member lost the coordinator) while the training thread may
// be inside a collective that waits for the dead peer; NCCL's kernels would wait on the GPU until
// the communicator is aborted (ncclCommAbort). The worker adds each communicator it connects, and
// the heartbeat's handler aborts them all before the process ends.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"

namespace autodist::collective {

class AbortList {
 public:
  // Keeps a communicator on the list until it is destroyed: destroy it before the communicator
  // (AbortAll never reaches a communicator whose entry is gone). Movable.
  class Entry {
   public:
    Entry() = default;
    Entry(AbortList* list, Communicator* communicator) : list_(list), communicator_(communicator) {}
    ~Entry();
    Entry(Entry&& other) noexcept;
    Entry& operator=(Entry&& other) noexcept;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

   private:
    void Remove();

    AbortList* list_ = nullptr;
    Communicator* communicator_ = nullptr;
  };

  AbortList() = default;
  AbortList(const AbortList&) = delete;
  AbortList& operator=(const AbortList&) = delete;

  [[nodiscard]] Entry Add(Communicator& communicator);

  // Calls Abort(reason) on every communicator on the list, from this thread; returns how many.
  // Safe against entries going away at the same time.
  size_t AbortAll(const std::string& reason);

  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::vector<Communicator*> communicators_;
};

}  // namespace autodist::collective
