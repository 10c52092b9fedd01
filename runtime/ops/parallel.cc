#include "runtime/ops/parallel.h"

#include <cblas.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace autodist::ops {
namespace {

thread_local bool in_pool_task = false;

// BLAS runs single-threaded inside our tasks (math/blas.cc), from the moment the library loads,
// so kernels that ask OpenBLAS for its thread count (conv) see it too.
[[maybe_unused]] const bool kBlasSingleThreaded = (openblas_set_num_threads(1), true);

// A fixed set of workers that sleep between jobs. One job at a time; a job's chunks are taken
// from a shared counter by the workers and the caller alike.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  }

  ~ThreadPool() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // False when the pool is busy with another caller's job.
  bool TryRun(int64_t chunks, const std::function<void(int64_t)>& task) {
    std::unique_lock<std::mutex> job(job_mutex_, std::try_to_lock);
    if (!job.owns_lock()) return false;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      task_ = &task;
      chunks_ = chunks;
      next_.store(0);
      pending_ = chunks;
      ++generation_;
    }
    work_ready_.notify_all();
    Work();
    std::unique_lock<std::mutex> lock(mutex_);
    work_done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
    return true;
  }

 private:
  void Work() {
    in_pool_task = true;
    int64_t done = 0;
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) {
      (*task_)(c);
      ++done;
    }
    in_pool_task = false;
    if (done == 0) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    pending_ -= done;
    if (pending_ == 0) work_done_.notify_all();
  }

  void WorkerLoop() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        work_ready_.wait(lock, [&] { return stop_ || (generation_ != seen && task_ != nullptr); });
        if (stop_) return;
        seen = generation_;
      }
      Work();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex job_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(int64_t)>* task_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  int64_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

struct PoolState {
  std::mutex mutex;
  int threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::shared_ptr<ThreadPool> pool;
};

PoolState& State() {
  static auto* state = new PoolState();  // never destroyed: workers may outlive statics
  return *state;
}

std::shared_ptr<ThreadPool> Pool() {
  PoolState& state = State();
  const std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.pool) state.pool = std::make_shared<ThreadPool>(state.threads);
  return state.pool;
}

}  // namespace

void SetNumThreads(int threads) {
  threads = std::max(1, threads);
  PoolState& state = State();
  {
    const std::lock_guard<std::mutex> lock(state.mutex);
    state.threads = threads;
    state.pool.reset();  // rebuilt with the new size on first use
  }
}

int NumThreads() {
  PoolState& state = State();
  const std::lock_guard<std::mutex> lock(state.mutex);
  return state.threads;
}

namespace detail {

void RunChunks(int64_t chunks, const std::function<void(int64_t)>& task) {
  if (chunks <= 1 || in_pool_task || !Pool()->TryRun(chunks, task)) {
    for (int64_t c = 0; c < chunks; ++c) task(c);
  }
}

}  // namespace detail

}  // namespace autodist::ops
