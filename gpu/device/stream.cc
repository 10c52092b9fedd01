#include "gpu/device/stream.h"

#include <fmt/format.h>

#include "gpu/device/cuda_error.h"

namespace autodist::gpu {

void UseGpu(int index) {
  CheckCuda(cudaSetDevice(index), [&] { return fmt::format("selecting GPU {}", index); });
}

Stream::Stream() {
  CheckCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a CUDA stream");
}

Stream::~Stream() {
  // Destroying waits for nothing: queued work still completes, and its memory is stream-ordered.
  cudaStreamDestroy(stream_);
}

void Stream::Synchronize() const {
  CheckCuda(cudaStreamSynchronize(stream_), "waiting for a CUDA stream");
}

Event::Event(bool timing) {
  CheckCuda(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming),
            "creating a CUDA event");
}

Event::~Event() { cudaEventDestroy(event_); }

void Event::Record(cudaStream_t stream) {
  CheckCuda(cudaEventRecord(event_, stream), "recording a CUDA event");
}

void Event::MakeWait(cudaStream_t stream) const {
  CheckCuda(cudaStreamWaitEvent(stream, event_, 0), "ordering a CUDA stream after an event");
}

void Event::Synchronize() const {
  CheckCuda(cudaEventSynchronize(event_), "waiting for a CUDA event");
}

float Event::ElapsedMsSince(const Event& start) const {
  float ms = 0;
  CheckCuda(cudaEventElapsedTime(&ms, start.event_, event_), "timing between CUDA events");
  return ms;
}

}  // namespace autodist::gpu
