// Data parallelism inside kernels (OpenMP) and the thread count of the process (ours and
// OpenBLAS's), set once at startup from the --threads option.
#pragma once

#include <algorithm>
#include <cstdint>

namespace autodist::ops {

// Sets the threads used by kernels and by BLAS.
void SetNumThreads(int threads);
int NumThreads();

// Calls fn(begin, end) on disjoint chunks of [0, n) in parallel; runs inline when n is below
// `grain` (small work is not worth waking threads for).
template <typename Fn>
void ParallelFor(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (n <= grain || NumThreads() <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(NumThreads(), (n + grain - 1) / grain);
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = n * c / chunks;
    const int64_t end = n * (c + 1) / chunks;
    fn(begin, end);
  }
}

}  // namespace autodist::ops
