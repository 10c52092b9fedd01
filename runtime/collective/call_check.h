// The check that every rank is about to run the same collective with the same sizes, shared by
// the backends (Gloo's, NCCL's in gpu/). Before a collective whose tag, sizes or type have not been
// verified yet, the ranks exchange a fixed-size record of the call in a tiny allgather; since every
// rank sees every record, every rank reaches the same verdict, and a mismatch becomes the same
// error on every rank instead of a hang or silently mixed data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"

namespace autodist::collective::detail {

enum class Collective : uint8_t {
  kAllReduceSum,
  kAllGather,
  kAllGatherV,
  kBroadcast,
  kBarrier,
  kReduceScatterSum,
};

const char* CollectiveName(Collective collective);

// One rank's call as the others see it.
struct CallSignature {
  Collective collective = Collective::kBarrier;
  ElementType type = ElementType::kFloat32;  // unused by Broadcast and Barrier
  int32_t detail = 0;  // AllReduceSum: the AllReduceAlgorithm run (kAuto resolved); Broadcast: root
  // Elements (ReduceScatterSum: per rank, each rank's block); Broadcast: bytes; AllGatherV: this
  // rank's own count.
  uint64_t count = 0;
  std::string tag;

  bool operator==(const CallSignature&) const = default;
};

// The record exchanged: the fields above, a hash of the tag and its first bytes (for messages).
constexpr size_t kSignatureBytes = 64;
using SignatureRecord = std::array<char, kSignatureBytes>;

SignatureRecord Encode(const CallSignature& call);

// "AllReduceSum 'grads' (rank 1 of 4)": how errors name a call.
std::string Describe(const CallSignature& call, int rank, int size);

// Whether a rank's one part (`part_bytes` at `part`) overlaps the size() parts of `whole`
// anywhere but at this rank's own: the in-place forms of ReduceScatterSum and AllGather allow
// only that overlap.
bool OverlapsOtherThanOwnPart(const void* whole, const void* part, size_t part_bytes, int rank,
                              int size);

// ReduceScatterSum's buffers (`call.count` elements of `call.type` per rank): both present unless
// the count is 0, and `out` either this rank's own block of `in` or clear of `in`. Throws
// InvalidArgument naming the call.
void CheckReduceScatterBuffers(const CallSignature& call, const void* in, const void* out, int rank,
                               int size);

// Throws InvalidArgument on `rank` when the records of `records` (one per rank, in rank order)
// do not describe the same call as `mine`: another collective or tag, element type, algorithm,
// root, or (unless the collective is AllGatherV, whose counts differ by design) count. The
// message names the tag, this rank's value and every other rank's. Returns every rank's count.
std::vector<uint64_t> CheckAgreement(const CallSignature& mine, int rank,
                                     const std::vector<SignatureRecord>& records);

}  // namespace autodist::collective::detail
