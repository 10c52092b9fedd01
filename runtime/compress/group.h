// What every compressor does to a fusion group besides compressing: validating it, fusing its
// gradients into one buffer (Horovod's tensor fusion: one collective per group instead of one per
// tensor) and scattering the result back, and keeping per-tensor state across steps.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/compress/compressor.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress {

// Throws InvalidArgument naming the compressor, the group and the tensor unless every gradient is
// a defined float32 tensor under a non-empty name that is unique within the group.
void ValidateGroup(const char* compressor, const std::string& group,
                   const std::vector<NamedGradient>& gradients);

// Elements of all gradients together.
int64_t TotalElements(const std::vector<NamedGradient>& gradients);

// Copies the gradients back to back into `buffer` (resized to their total).
void Fuse(const std::vector<NamedGradient>& gradients, std::vector<float>& buffer);
// Copies `buffer` (laid out as Fuse does) back into the gradients.
void Unfuse(const std::vector<float>& buffer, const std::vector<NamedGradient>& gradients);

// Replaces each gradient by its exact sum over the ranks with one float32 all-reduce (in place
// when there is a single gradient, through `buffer` otherwise). Returns the bytes contributed.
int64_t FusedAllReduce(const std::vector<NamedGradient>& gradients,
                       collective::Communicator& communicator,
                       collective::AllReduceAlgorithm algorithm, const std::string& tag,
                       std::vector<float>& buffer);

// Per-tensor float32 state (error-feedback residuals, PowerSGD's Q) kept across steps by name. A
// name must keep its size from step to step: the same variable (or shard) every step.
// FailedPrecondition unless a tensor's state (`what`: "residual", "Q") of `had` elements from an
// earlier step fits its gradient's `size` now. TensorState's check, and the devices' flat forms'.
void CheckStateSize(const char* compressor, const char* what, const std::string& group,
                    const std::string& name, size_t size, size_t had);

class TensorState {
 public:
  TensorState(const char* compressor, const char* what) : compressor_(compressor), what_(what) {}

  // The state of `name`, created zero-filled with `size` elements on first use; throws
  // FailedPrecondition if it exists with another size.
  std::vector<float>& Get(const std::string& group, const std::string& name, size_t size);
  // nullptr when `name` has no state yet.
  const std::vector<float>* Find(const std::string& name) const;
  bool Contains(const std::string& name) const { return values_.count(name) != 0; }

 private:
  const char* compressor_;  // for errors
  const char* what_;        // "residual", "Q": for errors
  std::map<std::string, std::vector<float>> values_;
};

}  // namespace autodist::compress
