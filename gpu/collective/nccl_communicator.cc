#include "gpu/collective/nccl_communicator.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <utility>

#include "gpu/device/cuda_error.h"
#include "gpu/device/stream.h"
#include "gpu/memory/cuda_tensor_memory.h"
#include "runtime/collective/rendezvous.h"
#include "runtime/common/error.h"
#include "runtime/observe/timeline.h"

namespace autodist::gpu {
namespace {

using collective::AllReduceAlgorithm;
using collective::ElementType;
using collective::detail::CallSignature;
using collective::detail::Collective;
using collective::detail::kSignatureBytes;
using collective::detail::SignatureRecord;
using Clock = std::chrono::steady_clock;

// Polls of a call in flight: yielding at first (a collective among idle peers takes tens of
// microseconds), then sleeping, so that a rank waiting long for a slow peer does not hold a core.
constexpr int kYieldingPolls = 2000;
constexpr auto kPollSleep = std::chrono::microseconds(50);
// How long a healthy communicator's destructor waits for ncclCommFinalize before aborting.
constexpr auto kFinalizeWait = std::chrono::seconds(10);

ncclDataType_t NcclType(ElementType type) {
  switch (type) {
    case ElementType::kFloat32:
      return ncclFloat32;
    case ElementType::kFloat16:
      return ncclFloat16;
    case ElementType::kInt64:
      return ncclInt64;
  }
  Fail(ErrorCode::kInternal, "no NCCL type for element type {}", static_cast<int>(type));
}

// Makes GPU `device` current for a call and gives the thread its previous one back after it: a
// thread that drives another GPU between collectives keeps it.
class CurrentGpu {
 public:
  explicit CurrentGpu(int device) {
    CheckCuda(cudaGetDevice(&previous_), "NCCL communicator: cudaGetDevice");
    if (previous_ != device) UseGpu(device);
  }
  ~CurrentGpu() { cudaSetDevice(previous_); }
  CurrentGpu(const CurrentGpu&) = delete;
  CurrentGpu& operator=(const CurrentGpu&) = delete;

 private:
  int previous_ = 0;
};

// A collective's name on the timeline, as the host's spans have it (sync/traced_communicator.h).
const char* SpanName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduceSum:
      return "all-reduce";
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kAllGatherV:
      return "all-gather-v";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kBarrier:
      return "barrier";
    case Collective::kReduceScatterSum:
      return "reduce-scatter";
  }
  return "collective";
}

// Result of an NCCL call made before there is a communicator (ncclGetUniqueId).
void CheckPlain(ncclResult_t result, const char* what) {
  AD_CHECK(result == ncclSuccess, kUnavailable, "{}: {}", what, ncclGetErrorString(result));
}

}  // namespace

NcclCommunicator::NcclCommunicator(const collective::CommunicatorOptions& options)
    : rank_(options.rank), size_(options.size), timeout_(options.timeout) {
  AD_CHECK(size_ >= 1 && rank_ >= 0 && rank_ < size_, kInvalidArgument,
           "NCCL communicator: rank {} of {}: expected 0 <= rank < size", rank_, size_);
  AD_CHECK(options.rendezvous != nullptr, kInvalidArgument,
           "NCCL communicator for rank {}: no rendezvous store", rank_);
  if (options.device >= 0) {
    device_ = options.device;
  } else {
    CheckCuda(cudaGetDevice(&device_), "NCCL communicator: cudaGetDevice");
  }
  const CurrentGpu current(device_);
  const std::string what =
      fmt::format("NCCL communicator set-up (rank {} of {}, GPU {})", rank_, size_, device_);
  const std::string token = collective::ShareFromRankZero(
      *options.rendezvous, options.prefix + "/nccl-unique-id", rank_,
      [] {
        ncclUniqueId id;
        CheckPlain(ncclGetUniqueId(&id), "ncclGetUniqueId");
        return std::string(id.internal, sizeof(id.internal));
      },
      options.connect_timeout);
  ncclUniqueId id;
  AD_CHECK(token.size() == sizeof(id.internal), kInvalidArgument,
           "{}: the shared unique id has {} bytes, expected {} (rank 0 runs another NCCL?)", what,
           token.size(), sizeof(id.internal));
  std::memcpy(id.internal, token.data(), token.size());
  try {
    CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), what);
    CheckCuda(cudaEventCreateWithFlags(&ordered_, cudaEventDisableTiming), what);
    CheckCuda(cudaMalloc(&records_, static_cast<size_t>(size_) * kSignatureBytes), what);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every wait is ours to bound (the header says why)
    const ncclResult_t started = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (started != ncclSuccess && started != ncclInProgress) {
      comm_ = nullptr;
      Fail(ErrorCode::kUnavailable, "{}: ncclCommInitRankConfig: {}", what,
           ncclGetErrorString(started));
    }
    Await(what, Until::kEnqueued, options.connect_timeout);
    times_ = std::make_unique<CollectiveTimes>(device_);
  } catch (...) {
    if (comm_ != nullptr && !aborted_) ncclCommAbort(comm_);
    if (records_ != nullptr) cudaFree(records_);
    if (ordered_ != nullptr) cudaEventDestroy(ordered_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  int previous = 0;
  const bool known = cudaGetDevice(&previous) == cudaSuccess;
  cudaSetDevice(device_);
  if (comm_ != nullptr && !aborted_) {
    bool finalized = false;
    if (!failure_ && !abort_requested_.load()) {
      // Flush what was issued; a peer that never finalizes must not hold this process up.
      ncclResult_t state = ncclCommFinalize(comm_);
      const auto until = Clock::now() + kFinalizeWait;
      while (state == ncclInProgress && Clock::now() < until) {
        std::this_thread::sleep_for(kPollSleep);
        if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      }
      finalized = state == ncclSuccess;
    }
    // Destroy frees the handle whatever it returns: one or the other, never both.
    if (finalized) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  times_.reset();  // its events, with their GPU current
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (records_ != nullptr) cudaFree(records_);
  if (ordered_ != nullptr) cudaEventDestroy(ordered_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (known) cudaSetDevice(previous);
}

void NcclCommunicator::Abort(const std::string& reason) {
  {
    const std::lock_guard lock(abort_mutex_);
    if (abort_requested_.load()) return;
    abort_reason_ = reason;
  }
  abort_requested_.store(true);
}

void NcclCommunicator::DataReady(const std::string& tag) {
  if (observe::ActiveTimeline() == nullptr) return;
  const CurrentGpu current(device_);
  times_->Ready(tag, TensorStream(device_));
}

void NcclCommunicator::Break(const std::string& what, const std::string& why) {
  if (comm_ != nullptr && !aborted_) {
    // Ends the kernels still waiting for peers; the handle is gone afterwards.
    ncclCommAbort(comm_);
    aborted_ = true;
  }
  failure_ = fmt::format("{}: {}", what, why);
  Fail(ErrorCode::kUnavailable, "{}: {}; the NCCL communicator was aborted", what, why);
}

void NcclCommunicator::BreakIfAborted(const std::string& what) {
  if (!abort_requested_.load()) return;
  std::string reason;
  {
    const std::lock_guard lock(abort_mutex_);
    reason = abort_reason_;
  }
  Break(what, "aborted: " + reason);
}

void NcclCommunicator::Check(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  Break(what, fmt::format("{} ({})", ncclGetErrorString(result),
                          comm_ != nullptr ? ncclGetLastError(comm_) : ""));
}

void NcclCommunicator::Await(const std::string& what, Until until,
                             std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  for (int polls = 0;; ++polls) {
    BreakIfAborted(what);
    ncclResult_t state = ncclSuccess;
    const ncclResult_t asked = ncclCommGetAsyncError(comm_, &state);
    if (asked != ncclSuccess) {
      Break(what, fmt::format("ncclCommGetAsyncError: {}", ncclGetErrorString(asked)));
    }
    if (state != ncclSuccess && state != ncclInProgress) {
      Break(what, fmt::format("{} ({})", ncclGetErrorString(state), ncclGetLastError(comm_)));
    }
    if (state == ncclSuccess) {
      if (until == Until::kEnqueued) return;
      const cudaError_t drained = cudaStreamQuery(stream_);
      if (drained == cudaSuccess) return;
      if (drained != cudaErrorNotReady) {
        Break(what, fmt::format("{}: {}", cudaGetErrorName(drained), cudaGetErrorString(drained)));
      }
    }
    const auto waited = Clock::now() - start;
    if (waited >= timeout) {
      Break(what, fmt::format("did not finish within {:.1f} s (a peer died, hangs, or never made "
                              "this call)",
                              std::chrono::duration<double>(waited).count()));
    }
    if (polls < kYieldingPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollSleep);
    }
  }
}

template <typename Body>
void NcclCommunicator::Run(const CallSignature& call, Body&& body) {
  const std::lock_guard lock(mutex_);
  const std::string what = collective::detail::Describe(call, rank_, size_);
  AD_CHECK(!failure_, kFailedPrecondition, "{}: the NCCL communicator failed earlier: {}", what,
           failure_.value_or(""));
  BreakIfAborted(what);
  const CurrentGpu current(device_);
  times_->Begin(stream_);  // while the stream is idle
  // The caller's buffers were written on the GPU's tensor stream (cuda_tensor_memory.h): this
  // communicator's stream starts after what is queued there now.
  CheckStream(cudaEventRecord(ordered_, TensorStream(device_)), what);
  CheckStream(cudaStreamWaitEvent(stream_, ordered_, 0), what);
  body(what);
  times_->Finish(SpanName(call.collective), call.tag);
}

void NcclCommunicator::EndTimed(const std::string& what) {
  if (!times_->started()) return;
  // A non-blocking communicator may still be putting the collective on the stream when the call
  // returns: an event recorded before its kernels would end the span early.
  Await(what, Until::kEnqueued, timeout_);
  CheckStream(times_->End(stream_), what);
}

void NcclCommunicator::CheckStream(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) {
    Break(what, fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status)));
  }
}

std::vector<uint64_t> NcclCommunicator::Exchange(const CallSignature& call) {
  const std::string what = collective::detail::Describe(call, rank_, size_) + " (call check)";
  const SignatureRecord mine = collective::detail::Encode(call);
  auto* records = static_cast<char*>(records_);
  char* own = records + static_cast<size_t>(rank_) * kSignatureBytes;
  CheckStream(cudaMemcpyAsync(own, mine.data(), kSignatureBytes, cudaMemcpyHostToDevice, stream_),
              what);
  // In place: this rank's record already sits at its offset of the gathered records.
  Check(ncclAllGather(own, records, kSignatureBytes, ncclUint8, comm_, stream_), what);
  // Drained before the copy back: a copy into pageable memory waits for everything queued
  // before it, which must not be a collective that a dead peer never finishes.
  Await(what, Until::kStreamDrained, timeout_);
  std::vector<SignatureRecord> all(static_cast<size_t>(size_));
  CheckStream(cudaMemcpyAsync(all.data(), records, all.size() * kSignatureBytes,
                              cudaMemcpyDeviceToHost, stream_),
              what);
  Await(what, Until::kStreamDrained, timeout_);
  return collective::detail::CheckAgreement(call, rank_, all);
}

void NcclCommunicator::Verify(const CallSignature& call) {
  // Every call, unlike Gloo's check of a tag's first call and changes: NCCL has no tags, so if
  // only some ranks checked (those whose sizes changed), their check would meet the others'
  // collective and mix with it.
  Exchange(call);
}

void* NcclCommunicator::Scratch(size_t bytes, const std::string& what) {
  if (bytes > scratch_bytes_) {
    // Stream-ordered: cudaFree and cudaMalloc would wait for the whole GPU, other ranks' NCCL
    // kernels included, which NCCL warns can deadlock.
    if (scratch_ != nullptr) CheckStream(cudaFreeAsync(scratch_, stream_), what);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    CheckStream(cudaMallocAsync(&scratch_, bytes, stream_), what);
    scratch_bytes_ = bytes;
  }
  return scratch_;
}

void NcclCommunicator::Count(int64_t sent, int64_t received) {
  bytes_sent_.fetch_add(sent);
  bytes_received_.fetch_add(received);
}

void NcclCommunicator::AllReduceSum(void* data, size_t count, ElementType type,
                                    AllReduceAlgorithm /*algorithm*/, const std::string& tag) {
  // Every rank records NCCL's own choice (0), whatever it asked for.
  const CallSignature call{Collective::kAllReduceSum, type, 0, count, tag};
  AD_CHECK(data != nullptr || count == 0, kInvalidArgument,
           "{}: data must not be null for {} elements",
           collective::detail::Describe(call, rank_, size_), count);
  Run(call, [&](const std::string& what) {
    Verify(call);
    if (count == 0) return;
    CheckStream(times_->Start(stream_), what);
    Check(ncclAllReduce(data, data, count, NcclType(type), ncclSum, comm_, stream_), what);
    EndTimed(what);
    Await(what, Until::kStreamDrained, timeout_);
    // NCCL's ring: each rank sends and receives 2 (n-1)/n of the message.
    const auto bytes = static_cast<int64_t>(count * collective::ElementBytes(type));
    const int64_t moved = 2 * bytes * (size_ - 1) / size_;
    Count(moved, moved);
  });
}

void NcclCommunicator::AllGather(const void* in, size_t count, ElementType type, void* out,
                                 const std::string& tag) {
  const CallSignature call{Collective::kAllGather, type, 0, count, tag};
  AD_CHECK((in != nullptr && out != nullptr) || count == 0, kInvalidArgument,
           "{}: in and out must not be null for {} elements",
           collective::detail::Describe(call, rank_, size_), count);
  // NCCL's in-place form only: `in` at this rank's part of `out`, or clear of `out`.
  AD_CHECK(count == 0 || !collective::detail::OverlapsOtherThanOwnPart(
                             out, in, count * collective::ElementBytes(type), rank_, size_),
           kInvalidArgument,
           "{}: in overlaps out other than as this rank's part (out + {} elements)",
           collective::detail::Describe(call, rank_, size_), static_cast<size_t>(rank_) * count);
  Run(call, [&](const std::string& what) {
    Verify(call);
    if (count == 0) return;
    CheckStream(times_->Start(stream_), what);
    Check(ncclAllGather(in, out, count, NcclType(type), comm_, stream_), what);
    EndTimed(what);
    Await(what, Until::kStreamDrained, timeout_);
    const auto bytes = static_cast<int64_t>(count * collective::ElementBytes(type));
    Count(bytes * (size_ - 1), bytes * (size_ - 1));
  });
}

void NcclCommunicator::ReduceScatterSum(const void* in, void* out, size_t count, ElementType type,
                                        const std::string& tag) {
  const CallSignature call{Collective::kReduceScatterSum, type, 0, count, tag};
  collective::detail::CheckReduceScatterBuffers(call, in, out, rank_, size_);
  Run(call, [&](const std::string& what) {
    Verify(call);
    if (count == 0) return;
    CheckStream(times_->Start(stream_), what);
    Check(ncclReduceScatter(in, out, count, NcclType(type), ncclSum, comm_, stream_), what);
    EndTimed(what);
    Await(what, Until::kStreamDrained, timeout_);
    const auto bytes = static_cast<int64_t>(count * collective::ElementBytes(type));
    Count(bytes * (size_ - 1), bytes * (size_ - 1));
  });
}

std::vector<size_t> NcclCommunicator::AllGatherV(const void* in, size_t count, ElementType type,
                                                 std::vector<std::byte>& out,
                                                 const std::string& tag) {
  const CallSignature call{Collective::kAllGatherV, type, 0, count, tag};
  AD_CHECK(in != nullptr || count == 0, kInvalidArgument, "{}: in must not be null for {} elements",
           collective::detail::Describe(call, rank_, size_), count);
  std::vector<size_t> counts;
  Run(call, [&](const std::string& what) {
    // The counts differ by design: every call exchanges them (the check hands them back).
    const std::vector<uint64_t> all = Exchange(call);
    counts.assign(all.begin(), all.end());
    const size_t element = collective::ElementBytes(type);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0}) * element;
    out.resize(total);
    if (total == 0) return;
    auto* gathered = static_cast<std::byte*>(Scratch(total, what));
    // One broadcast per rank, from its part into its offset: NCCL has no all-gather of unequal
    // parts; grouped, they run as one operation.
    CheckStream(times_->Start(stream_), what);
    Check(ncclGroupStart(), what);
    // The group is closed before any error is raised: an open group would hold every later
    // NCCL call of this thread.
    ncclResult_t first_error = ncclSuccess;
    size_t offset = 0;
    for (int r = 0; r < size_; ++r) {
      const size_t bytes = counts[static_cast<size_t>(r)] * element;
      if (bytes > 0) {
        const void* from = r == rank_ ? in : gathered + offset;
        const ncclResult_t added =
            ncclBroadcast(from, gathered + offset, bytes, ncclUint8, r, comm_, stream_);
        if (added != ncclSuccess && added != ncclInProgress && first_error == ncclSuccess) {
          first_error = added;
        }
      }
      offset += bytes;
    }
    const ncclResult_t ended = ncclGroupEnd();
    Check(first_error, what);
    Check(ended, what);
    EndTimed(what);
    // Drained before the copy into pageable memory (Exchange says why).
    Await(what, Until::kStreamDrained, timeout_);
    CheckStream(cudaMemcpyAsync(out.data(), gathered, total, cudaMemcpyDeviceToHost, stream_),
                what);
    Await(what, Until::kStreamDrained, timeout_);
    const auto own = static_cast<int64_t>(count * element);
    Count(own * (size_ - 1), static_cast<int64_t>(total) - own);
  });
  return counts;
}

void NcclCommunicator::Broadcast(void* data, size_t bytes, int root, const std::string& tag) {
  const CallSignature call{Collective::kBroadcast, ElementType::kFloat32, root, bytes, tag};
  const std::string described = collective::detail::Describe(call, rank_, size_);
  AD_CHECK(root >= 0 && root < size_, kInvalidArgument, "{}: root {} is not a rank of {}",
           described, root, size_);
  AD_CHECK(data != nullptr || bytes == 0, kInvalidArgument,
           "{}: data must not be null for {} bytes", described, bytes);
  Run(call, [&](const std::string& what) {
    Verify(call);
    if (bytes == 0) return;
    CheckStream(times_->Start(stream_), what);
    Check(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, stream_), what);
    EndTimed(what);
    Await(what, Until::kStreamDrained, timeout_);
    const auto moved = static_cast<int64_t>(bytes);
    Count(rank_ == root ? moved : 0, rank_ == root ? 0 : moved);
  });
}

void NcclCommunicator::Barrier(const std::string& tag) {
  const CallSignature call{Collective::kBarrier, ElementType::kFloat32, 0, 0, tag};
  Run(call, [&](const std::string& what) {
    Verify(call);
    // A one-element all-reduce: no rank leaves it before every rank has entered it.
    void* flag = Scratch(sizeof(float), what);
    CheckStream(times_->Start(stream_), what);
    Check(ncclAllReduce(flag, flag, 1, ncclFloat32, ncclSum, comm_, stream_), what);
    EndTimed(what);
    Await(what, Until::kStreamDrained, timeout_);
  });
}

namespace {

const collective::CommunicatorRegistrar kRegistrar(
    "nccl", [](const collective::CommunicatorOptions& options) {
      return std::make_unique<NcclCommunicator>(options);
    });

}  // namespace

}  // namespace autodist::gpu
