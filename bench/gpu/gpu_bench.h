// What the GPU benchmarks share: timing repeated work on a stream with CUDA events, and a main
// that reports our errors by the benchmark's name.
#pragma once

#include <fmt/format.h>

#include "gpu/device/stream.h"
#include "runtime/common/error.h"

namespace autodist::bench {

// Milliseconds per call of `run` (which queues work on `stream`), over `runs` calls timed
// between two events on the stream.
template <typename Run>
double MsPerRun(cudaStream_t stream, int runs, const Run& run) {
  gpu::Event start(true);
  gpu::Event stop(true);
  start.Record(stream);
  for (int i = 0; i < runs; ++i) run();
  stop.Record(stream);
  stop.Synchronize();
  return static_cast<double>(stop.ElapsedMsSince(start)) / runs;
}

// Runs body(argc, argv); an autodist::Error ends the program with 1, printed after `name`.
template <typename Body>
int Main(const char* name, int argc, char** argv, const Body& body) {
  try {
    return body(argc, argv);
  } catch (const Error& error) {
    fmt::print(stderr, "{}: {}\n", name, error.what());
    return 1;
  }
}

}  // namespace autodist::bench
