// The worker's side of compressed parameter-server pushes: a dense gradient is sent as float16
// halves or as its top-k entries (tensor_wire.h encodes, the server's PieceAssembler decodes),
// with error feedback where asked — what compression left out of one step's push is added to
// the next one's, so over steps nothing is lost. Semantics: docs/compression.md.
//
// Residuals belong to one stream of pushes: one tensor (variable or shard) pushed by one replica
// stream (its first_replica: a single replica, or a worker's proxy sum) to one server. A
// PsClient talks to one server, so it keeps one PushEncoder, keyed by (first_replica, name).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/comm/ps_types.h"
#include "runtime/comm/tensor_wire.h"

namespace autodist::comm {

// Throws InvalidArgument naming `what` and the tensor unless exactly one of dense and sparse is
// set and, for a compressed dense gradient, it is float32 and a TopK fraction is in (0, 1].
void CheckGradientRef(const std::string& what, const std::string& name,
                      const GradientRef& gradient);

// Thread-safe: pushes of different streams run concurrently; pushes of one stream are
// serialized per tensor (a stream pushes its steps one after another anyway).
class PushEncoder {
 public:
  // Emits `gradient` (checked with CheckGradientRef) as pieces named `name`, compressed as it
  // asks, updating the stream's residual. Throws FailedPrecondition naming `what` when a
  // tensor's element count differs from the one its residual was made for.
  void Emit(const std::string& what, int first_replica, const std::string& name,
            const GradientRef& gradient, int32_t replicas, int64_t piece_bytes,
            const PieceSink& sink);

  // A copy of a stream's residual; nullopt before its first error-feedback push.
  std::optional<std::vector<float>> Residual(int first_replica, const std::string& name) const;

 private:
  struct State {
    std::mutex mutex;  // held while the residual is read and replaced
    std::vector<float> residual;
    std::vector<int64_t> picked;  // TopK's selection scratch, kept to allocate once
  };

  // The stream's state, made (zero residual of `elements`) on first use.
  State& StateFor(const std::string& what, int first_replica, const std::string& name,
                  int64_t elements);

  mutable std::mutex mutex_;  // guards the map, not the states
  std::map<std::pair<int, std::string>, std::unique_ptr<State>> states_;
};

}  // namespace autodist::comm
