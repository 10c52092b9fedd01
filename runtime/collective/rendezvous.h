// Where the ranks of a communicator meet before they can talk: each publishes what the others
// need to connect to it (Gloo's addresses, NCCL's unique id) and reads theirs. In a job it is the
// coordinator's key-value store (runtime/coordinator/rendezvous_store.h), which every process
// already talks to, so collectives need no rendezvous service of their own.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace autodist::collective {

class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;

  virtual void Set(const std::string& key, const std::string& value) = 0;

  // The values of `keys`, in order, waiting up to `wait` for keys not set yet. Throws
  // autodist::Error kUnavailable naming the missing keys when the wait passes (errors of the
  // store behind it keep their codes).
  virtual std::vector<std::string> Get(const std::vector<std::string>& keys,
                                       std::chrono::milliseconds wait) = 0;
};

}  // namespace autodist::collective
