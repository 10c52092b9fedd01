// Data parallelism inside kernels and the thread count of the process, set once at startup
// from the --threads option. OpenBLAS itself runs single-threaded inside our tasks (math/blas.cc).
//
// ParallelFor runs on our own pool whose idle workers sleep on a condition variable. (OpenMP's
// default idle policy spins, and spinning workers starved OpenBLAS's threads of the cores:
// the MLP trained 10x slower with libgomp than with passive waiting.)
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

namespace autodist::ops {

// Sets the threads used by kernels (BLAS calls included).
void SetNumThreads(int threads);
int NumThreads();

namespace detail {
// Runs task(0), ..., task(chunks - 1) on the pool and the calling thread; returns when all are
// done. Runs inline when called from a pool task or while another caller uses the pool.
void RunChunks(int64_t chunks, const std::function<void(int64_t)>& task);
}  // namespace detail

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
  detail::RunChunks(chunks, [&](int64_t c) { fn(n * c / chunks, n * (c + 1) / chunks); });
}

}  // namespace autodist::ops
