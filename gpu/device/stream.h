// CUDA streams and events as owned objects: work on one stream runs in order; events order work
// across streams (a copy stream feeding the compute stream) and time it.
#pragma once

#include <cuda_runtime_api.h>

namespace autodist::gpu {

// Selects GPU `index` for this thread (cudaSetDevice), naming it in the error.
void UseGpu(int index);

class Stream {
 public:
  // A non-blocking stream on the current GPU: it does not wait for the legacy default stream.
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  // Blocks until everything queued so far has run; throws the first error of that work.
  void Synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  // timing: whether ElapsedMs may be asked of it (an event without timing is cheaper to wait on).
  explicit Event(bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  // Marks the point in `stream` that Wait and ElapsedMs refer to.
  void Record(cudaStream_t stream);
  // Makes `stream` wait, on the device, for the work before the last Record.
  void MakeWait(cudaStream_t stream) const;
  void Synchronize() const;
  // Milliseconds from `start` to this event; both recorded, with timing, and completed.
  float ElapsedMsSince(const Event& start) const;

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace autodist::gpu
