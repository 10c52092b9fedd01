// Gradient compression for all-reduce synchronizers (Horovod's compressors, AutoDist's three and
// two more). A compressor reduces one fusion group of gradients across every rank of a
// communicator, in place, keeping whatever state it needs between steps (error-feedback
// residuals, PowerSGD's Q matrices) keyed by the tensors' names.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/tensor/tensor.h"

namespace autodist::compress {

// AutoDist's enum values (synchronizers.proto) first, then ours; each kind's value is its wire
// value in the Strategy.
enum class CompressorKind {
  kNone = 0,       // float32 on the wire
  kHorovod = 1,    // float16 on the wire: cast, all-reduce in float16, cast back
  kHorovodEF = 2,  // float16 with error feedback: the previous step's rounding error is added back
  kPowerSGD = 3,   // rank-r low-rank approximation with error feedback (Vogels et al. 2019)
  kTopKEF = 4,     // the largest k-fraction of elements with error feedback (all-gather based)
};

struct CompressorOptions {
  CompressorKind kind = CompressorKind::kNone;
  collective::AllReduceAlgorithm algorithm = collective::AllReduceAlgorithm::kAuto;
  // PowerSGD.
  int rank = 1;                          // r
  int64_t start_step = 0;                // steps before this one are reduced uncompressed
  int64_t min_compression_elements = 0;  // smaller tensors (or ones that would not shrink) go
                                         // uncompressed; 0: only "would not shrink" applies
  bool warm_start = true;                // reuse Q from the previous step
  uint64_t seed = 0;                     // initial Q
  // TopK.
  double fraction = 0.01;  // k = ceil(fraction * elements of the fused group)
};

// One gradient of a group: its variable (or shard) name and the tensor, float32, updated in place.
struct NamedGradient {
  std::string name;
  tensor::Tensor* gradient = nullptr;
};

// Totals over every Reduce call since the compressor was made. wire_bytes counts the payload this
// rank contributed to its collectives (float16 buffer, P and Q factors, index/value pairs), not
// the algorithm's traffic (a ring all-reduce moves about 2 (N-1)/N times its buffer; that is
// Communicator::bytes_sent()), so ratio() is the compression ratio whatever the algorithm.
struct CompressionStats {
  int64_t raw_bytes = 0;   // float32 bytes of the gradients reduced
  int64_t wire_bytes = 0;  // payload bytes this rank contributed for them
  double ratio() const { return wire_bytes == 0 ? 1.0 : double(raw_bytes) / double(wire_bytes); }
};

// One compressor per rank and synchronizer; its state is that rank's, so it is not shared
// between threads.
class Compressor {
 public:
  virtual ~Compressor() = default;

  // Replaces every gradient of `group` by its SUM over the ranks of `communicator` (approximate
  // for the lossy kinds); the caller divides by the replica count. `group` names the fusion
  // group in errors and collective tags; `step` is the 0-based training step. Every rank calls
  // it with the same group, names and shapes, in the same order. Throws InvalidArgument naming
  // the group and tensor unless every gradient is a defined float32 tensor with a unique,
  // non-empty name, and FailedPrecondition if a name's size differs from an earlier step's.
  virtual void Reduce(const std::string& group, const std::vector<NamedGradient>& gradients,
                      collective::Communicator& communicator, int64_t step) = 0;

  const CompressionStats& stats() const { return stats_; }

 protected:
  CompressionStats stats_;
};

// The registered compressor of options.kind (registry.h). Throws InvalidArgument for options out
// of range: PowerSGD's rank < 1, start_step < 0 or min_compression_elements < 0; TopK's fraction
// outside (0, 1].
std::unique_ptr<Compressor> MakeCompressor(const CompressorOptions& options);

// The registered name: "NoneCompressor", "HorovodCompressor", "HorovodCompressorEF",
// "PowerSGDCompressor", "TopKCompressorEF".
const char* CompressorName(CompressorKind kind);

}  // namespace autodist::compress
