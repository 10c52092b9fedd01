// Where the ranks of a communicator meet before they can talk: each publishes what the others
// need to connect to it (Gloo's addresses, NCCL's unique id) and reads theirs. In a job it is the
// coordinator's key-value store (runtime/coordinator/rendezvous_store.h), which every process
// already talks to, so collectives need no rendezvous service of their own.
#pragma once

#include <chrono>
#include <functional>
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

// The token rank 0 makes with `make` (an NCCL unique id: random bytes every rank must use), set
// under `key` and read back by every rank, rank 0 included, so that all return the same bytes.
// Binary tokens travel base64-encoded. Throws the store's errors (kUnavailable when rank 0 has
// not published within `wait`), and kInvalidArgument when the value under `key` is not base64.
std::string ShareFromRankZero(RendezvousStore& store, const std::string& key, int rank,
                              const std::function<std::string()>& make,
                              std::chrono::milliseconds wait);

// Every rank's value, in rank order, where this process runs ranks first_rank ..
// first_rank + values.size() - 1 (values[i] is rank first_rank + i's): each rank's value is set
// under "<prefix>/<rank>", then all `size` are read (values are text; the store carries them as
// they are). Throws the store's errors (kUnavailable naming the keys missing when their ranks
// have not published within `wait`).
std::vector<std::string> GatherFromEveryRank(RendezvousStore& store, const std::string& prefix,
                                             int first_rank, const std::vector<std::string>& values,
                                             int size, std::chrono::milliseconds wait);

}  // namespace autodist::collective
