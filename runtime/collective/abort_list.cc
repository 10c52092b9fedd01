#include "runtime/collective/abort_list.h"

#include <algorithm>
#include <utility>

namespace autodist::collective {

AbortList::Entry::~Entry() { Remove(); }

AbortList::Entry::Entry(Entry&& other) noexcept
    : list_(std::exchange(other.list_, nullptr)),
      communicator_(std::exchange(other.communicator_, nullptr)) {}

AbortList::Entry& AbortList::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    Remove();
    list_ = std::exchange(other.list_, nullptr);
    communicator_ = std::exchange(other.communicator_, nullptr);
  }
  return *this;
}

void AbortList::Entry::Remove() {
  if (list_ == nullptr) return;
  const std::lock_guard lock(list_->mutex_);
  std::vector<Communicator*>& all = list_->communicators_;
  const auto it = std::find(all.begin(), all.end(), communicator_);
  if (it != all.end()) all.erase(it);
  list_ = nullptr;
  communicator_ = nullptr;
}

AbortList::Entry AbortList::Add(Communicator& communicator) {
  const std::lock_guard lock(mutex_);
  communicators_.push_back(&communicator);
  return {this, &communicator};
}

size_t AbortList::AbortAll(const std::string& reason) {
  // Under the lock throughout: an entry being destroyed waits until its communicator has been
  // aborted, so none is reached after it is gone. Abort only flags and shuts sockets down; it
  // does not wait for the collective in flight, so holding the lock is brief.
  const std::lock_guard lock(mutex_);
  for (Communicator* communicator : communicators_) communicator->Abort(reason);
  return communicators_.size();
}

size_t AbortList::size() const {
  const std::lock_guard lock(mutex_);
  return communicators_.size();
}

}  // namespace autodist::collective
