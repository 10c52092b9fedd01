// Named barriers among the workers of a job (bookkeeping only: the service waits and holds the
// lock). A worker's k-th call of a barrier name joins generation k of that name, so a name can
// be reused (one barrier per epoch) and a retried call, which repeats its generation, joins the
// arrival it already made instead of counting twice.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace autodist::coordinator {

class Barriers {
 public:
  // `workers`: worker nodes by rank.
  explicit Barriers(std::vector<std::string> workers);

  // Worker `rank` arrives at generation `generation` of barrier `name`. Throws InvalidArgument
  // for an empty name or a negative generation.
  void Arrive(const std::string& name, int64_t generation, int rank);
  bool Released(const std::string& name, int64_t generation) const;
  // Workers not arrived yet, by rank; empty once released.
  std::vector<std::string> Missing(const std::string& name, int64_t generation) const;

 private:
  using Key = std::pair<std::string, int64_t>;

  std::vector<std::string> workers_;
  std::map<Key, std::vector<bool>> pending_;  // who arrived, by rank
  std::set<Key> released_;
};

}  // namespace autodist::coordinator
