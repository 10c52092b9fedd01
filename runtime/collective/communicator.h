// Collectives between the worker processes of a job, behind one interface so that strategies
// don't care which library moves the bytes: Gloo over TCP on CPU (gloo_communicator.h), NCCL on
// GPU (gpu/, later). Every rank calls the same collectives in the same order with the same sizes;
// sizes are checked across ranks before a collective runs (on a tag's first call and whenever its
// sizes change), so a mismatch is an error on every rank instead of a hang or silently mixed
// data. Errors are autodist::Error: kInvalidArgument for a mismatch, kUnavailable when a peer
// failed or did not take part within the communicator's timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace autodist::collective {

enum class ElementType { kFloat32, kFloat16, kInt64 };

// Bytes per element.
size_t ElementBytes(ElementType type);
const char* ElementTypeName(ElementType type);

// How an all-reduce is run (AllReduceSynchronizer.spec): AUTO picks per message size, RING is
// the ring algorithm; NCCL means RING on a CPU-only run (with a warning by the caller). The last
// two are for tests and benchmarks that pin one.
enum class AllReduceAlgorithm { kAuto, kRing, kHalvingDoubling, kRecursiveDoubling, kDirect };

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: every rank ends with the element-wise sum over all ranks of `count` elements at
  // `data`. `tag` names the call site ("group-3") in errors and in the size check.
  virtual void AllReduceSum(void* data, size_t count, ElementType type,
                            AllReduceAlgorithm algorithm, const std::string& tag) = 0;

  // Every rank contributes `count` elements; `out` (size() * count elements) receives them in
  // rank order.
  virtual void AllGather(const void* in, size_t count, ElementType type, void* out,
                         const std::string& tag) = 0;

  // Every rank contributes size() blocks of `count` elements at `in`; rank r ends with the
  // element-wise sum over all ranks of block r in `out` (`count` elements). `out` may be `in`'s
  // own block (in + rank * count elements, in place, as NCCL allows) but must not overlap the
  // others.
  virtual void ReduceScatterSum(const void* in, void* out, size_t count, ElementType type,
                                const std::string& tag) = 0;

  // Every rank contributes its own number of elements; returns every rank's count, and `out`
  // holds their elements back to back in rank order (resized to fit).
  virtual std::vector<size_t> AllGatherV(const void* in, size_t count, ElementType type,
                                         std::vector<std::byte>& out, const std::string& tag) = 0;

  // `bytes` at `data` from `root` to every rank.
  virtual void Broadcast(void* data, size_t bytes, int root, const std::string& tag) = 0;

  virtual void Barrier(const std::string& tag) = 0;

  // From any thread, once the job has failed (a peer died or missed the heartbeat deadline): the
  // collective in flight and every later one fail with kUnavailable naming `reason`, without
  // waiting for the peers or the timeout where the library can be interrupted (each
  // implementation says where it cannot). The communicator cannot be used again.
  virtual void Abort(const std::string& reason) = 0;

  // From the thread that wrote the data of this rank's next collective tagged `tag`, once it has
  // queued the writes, without waiting for them: a backend whose buffers are written on a device
  // stream may record that moment for the timeline (the NCCL communicator's device times). The
  // others need nothing.
  virtual void DataReady(const std::string& /*tag*/) {}

  // Payload bytes this rank has sent so far (an estimate from the algorithm used), for the
  // run's summary and compression ratios.
  virtual int64_t bytes_sent() const = 0;
  // Payload bytes this rank has received so far, estimated the same way.
  virtual int64_t bytes_received() const = 0;
};

}  // namespace autodist::collective
