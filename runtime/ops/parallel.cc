#include "runtime/ops/parallel.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace autodist::ops {
namespace {

std::atomic<int>& Threads() {
  static std::atomic<int> threads{
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()))};
  return threads;
}

}  // namespace

void SetNumThreads(int threads) {
  threads = std::max(1, threads);
  Threads() = threads;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int NumThreads() { return Threads(); }

}  // namespace autodist::ops
