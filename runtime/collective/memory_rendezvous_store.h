// A RendezvousStore in this process's memory: what the coordinator's store is to a job, for
// communicators whose ranks are threads of one process (`autodist profile` measuring the cost of
// a collective, the tests).
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/collective/rendezvous.h"

namespace autodist::collective {

class MemoryRendezvousStore final : public RendezvousStore {
 public:
  void Set(const std::string& key, const std::string& value) override;
  // Throws Unavailable naming the keys still missing when `wait` passes.
  std::vector<std::string> Get(const std::vector<std::string>& keys,
                               std::chrono::milliseconds wait) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

}  // namespace autodist::collective
