// The NCCL backend of the Communicator interface (runtime/collective/communicator.h), registered
// as "nccl": collectives between GPUs, on buffers in device memory.
//
// * Set-up goes through the job's rendezvous store (the coordinator's): rank 0 makes the
//   ncclUniqueId and every rank reads it there (ShareFromRankZero); there is no rendezvous
//   service of NCCL's own. The rank is the job's global replica index, one per GPU.
// * Every communicator is non-blocking (ncclConfig_t::blocking = 0), so that no NCCL call can
//   hang the process: each call is followed by polling ncclCommGetAsyncError and the stream,
//   up to the options' timeout, and a call that does not finish in time, or an Abort from
//   another thread (the heartbeat that found a peer dead), aborts the communicator
//   (ncclCommAbort) and fails with kUnavailable naming the call.
// * As with Gloo, a call is checked across ranks (runtime/collective/call_check.h) before it
//   runs, on the device: mismatched sizes are an error on every rank, not a hang. Every call,
//   not only a tag's first: NCCL has no tags to keep a check apart from another rank's
//   collective. The cost is one 64-byte all-gather per call.
// * Each call is synchronous, as the interface is: it starts after the work already queued on
//   the GPU's tensor stream (where tensors are written, cuda_tensor_memory.h; an event orders
//   the communicator's stream after it) and returns once the collective has finished on the
//   communicator's own stream. Overlap with backward comes from the caller's communication
//   thread (sync/device_all_reduce_part.h); the interface takes no stream.
// * While a timeline records, each collective's device times go on it (collective_times.h):
//   its start and end on the communicator's stream and, when the caller marked its data ready
//   (DataReady), that moment on the tensor stream, so that the timeline shows the overlap on
//   the device's clock, not only when the host queued the work.
// * A call leaves the thread's current GPU as it found it.
//
// Only one GPU per process has been run so far (docs/gpu.md): a 1-rank communicator copies and
// cannot show multi-rank correctness, overlap or the abort on a peer's death. The device times
// have not run on a GPU yet.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpu/collective/collective_times.h"
#include "runtime/collective/call_check.h"
#include "runtime/collective/communicator.h"
#include "runtime/collective/registry.h"

namespace autodist::gpu {

class NcclCommunicator final : public collective::Communicator {
 public:
  // Joins the other ranks (options.size of them, this one options.rank) on GPU options.device
  // (-1: the current one). Throws kUnavailable when they do not all join within
  // options.connect_timeout, kInvalidArgument for a bad rank or size.
  explicit NcclCommunicator(const collective::CommunicatorOptions& options);
  // Flushes and frees a healthy communicator; aborts a broken one.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

  // `data` on this communicator's GPU. NCCL picks its own algorithm: `algorithm` is not used.
  void AllReduceSum(void* data, size_t count, collective::ElementType type,
                    collective::AllReduceAlgorithm algorithm, const std::string& tag) override;
  // `in` and `out` on this communicator's GPU.
  void AllGather(const void* in, size_t count, collective::ElementType type, void* out,
                 const std::string& tag) override;
  // `in` and `out` on this communicator's GPU.
  void ReduceScatterSum(const void* in, void* out, size_t count, collective::ElementType type,
                        const std::string& tag) override;
  // `in` on this communicator's GPU; `out` in host memory, as the interface has it (the
  // elements are gathered on the GPU, then copied).
  std::vector<size_t> AllGatherV(const void* in, size_t count, collective::ElementType type,
                                 std::vector<std::byte>& out, const std::string& tag) override;
  // `data` on this communicator's GPU.
  void Broadcast(void* data, size_t bytes, int root, const std::string& tag) override;
  void Barrier(const std::string& tag) override;

  int64_t bytes_sent() const override { return bytes_sent_.load(); }
  int64_t bytes_received() const override { return bytes_received_.load(); }

  // From any thread: the collective in flight, if any, and every later one fail with
  // kUnavailable naming `reason` at the next poll (within 50 us plus a yield), and the
  // communicator is aborted (ncclCommAbort, by the thread of the call in flight, or the next
  // call, or the destructor).
  void Abort(const std::string& reason) override;
  // From the thread that queued the writes, while a timeline records: marks the tensor stream's
  // current point as the moment the data of the next collective tagged `tag` is complete.
  void DataReady(const std::string& tag) override;

 private:
  // What the polling waits for after NCCL has taken a call.
  enum class Until { kEnqueued, kStreamDrained };

  template <typename Body>
  void Run(const collective::detail::CallSignature& call, Body&& body);
  // Polls until the pending NCCL operation left ncclInProgress and, with kStreamDrained, the
  // stream finished; aborts and throws on an error, the deadline or an Abort.
  void Await(const std::string& what, Until until, std::chrono::milliseconds timeout);
  // Aborts the communicator (once) and throws kUnavailable "<what>: <why>".
  [[noreturn]] void Break(const std::string& what, const std::string& why);
  // Break(what, "aborted: <reason>") when Abort was called.
  void BreakIfAborted(const std::string& what);
  void Check(ncclResult_t result, const std::string& what);
  // The call check: every rank's record of `call` (a gather on the device), compared; returns
  // every rank's count.
  std::vector<uint64_t> Exchange(const collective::detail::CallSignature& call);
  void Verify(const collective::detail::CallSignature& call);
  // Records the end of a collective that the device times time (collective_times.h), once NCCL
  // has put it on the stream.
  void EndTimed(const std::string& what);
  // A CUDA call's status: an error breaks the communicator (it may be mid-collective).
  void CheckStream(cudaError_t status, const std::string& what);
  // Device scratch of at least `bytes`, kept for later calls (stream-ordered on stream_).
  void* Scratch(size_t bytes, const std::string& what);
  void Count(int64_t sent, int64_t received);

  const int rank_;
  const int size_;
  int device_ = 0;
  const std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ordered_ = nullptr;  // orders stream_ after the GPU's tensor stream
  void* records_ = nullptr;        // size_ signature records on the device
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::mutex mutex_;                    // one call at a time
  std::optional<std::string> failure_;  // why the communicator broke
  std::atomic<bool> abort_requested_{false};
  std::mutex abort_mutex_;
  std::string abort_reason_;
  bool aborted_ = false;  // ncclCommAbort was called
  std::atomic<int64_t> bytes_sent_{0};
  std::atomic<int64_t> bytes_received_{0};
  std::unique_ptr<CollectiveTimes> times_;  // the device times for the timeline
};

}  // namespace autodist::gpu
