// The client and the API-server double with ONE free thread in cpprestsdk's pool, the pool every
// HTTP completion of a process runs on. Anything that waits on that pool from a pool thread (a
// continuation calling .get() on a body, a watch sink calling .wait() on its buffer) hangs there
// for good; with the default 40 threads the same waits only hang once 40 requests pile up. The
// operator runs on 2 threads (--http-threads), the scale benchmark's double on 2.
//
// The pool has 2 threads and each test keeps one of them busy, so that only one is free while
// it runs: cpprestsdk's listener closes by waiting, on a pool thread, for its connections to
// finish on the pool, so the double's teardown needs both.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <latch>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

// After <utility>: the Boost.Asio it includes uses std::exchange without including it.
#include <pplx/pplxtasks.h>
#include <pplx/threadpool.h>

#include "operator/kube/api_error.h"
#include "operator/kube/client.h"
#include "tests/operator/fake_cluster.h"

namespace autodist::kube {
namespace {

using testing::ConfigMap;
using testing::Eventually;
using testing::FakeCluster;
namespace r = resources;

// Before main, so before anything in this process touches the pool.
const bool kTwoPoolThreads = [] {
  crossplat::threadpool::initialize_with_threads(2);
  return true;
}();

// Occupies one pool thread from construction to destruction.
class OnePoolThreadTaken {
 public:
  OnePoolThreadTaken() {
    auto started = std::make_shared<std::latch>(1);
    task_ = pplx::create_task([started, release = release_] {
      started->count_down();
      release->wait();
    });
    started->wait();
  }
  ~OnePoolThreadTaken() {
    release_->count_down();
    task_.wait();
  }
  OnePoolThreadTaken(const OnePoolThreadTaken&) = delete;
  OnePoolThreadTaken& operator=(const OnePoolThreadTaken&) = delete;

 private:
  std::shared_ptr<std::latch> release_ = std::make_shared<std::latch>(1);
  pplx::task<void> task_;
};

// Runs `body` on its own thread and gives it `limit`. A hang here is the bug under test, and a
// hung pool cannot be torn down, so the process ends at once with the failure printed.
void WithinOrExit(const char* what, std::chrono::seconds limit, std::function<void()> body) {
  auto done = std::async(std::launch::async, std::move(body));
  if (done.wait_for(limit) == std::future_status::timeout) {
    ADD_FAILURE() << what << " did not finish within " << limit.count()
                  << " s: something waits on cpprestsdk's pool from a pool thread";
    std::fprintf(stderr, "%s hung; exiting\n", what);
    std::_Exit(1);
  }
  done.get();
}

TEST(OnePoolThreadTest, WatchedWritesFromManyClientsAllComplete) {
  ASSERT_TRUE(kTwoPoolThreads);
  FakeCluster cluster;
  auto client = cluster.NewClient();
  std::atomic<int> added{0};
  constexpr int kWriters = 16;
  {
    const OnePoolThreadTaken taken;
    std::jthread watch([&](std::stop_token stop) {
      client->Watch(
          r::kConfigMaps, "default", {},
          [&](const WatchEvent& e) { added += e.type == EventType::kAdded ? 1 : 0; }, stop);
    });
    WithinOrExit("16 concurrent creates under an open watch", std::chrono::seconds(60), [&] {
      std::vector<std::thread> writers;
      for (int i = 0; i < kWriters; ++i) {
        writers.emplace_back([&, i] {
          auto own = cluster.NewClient();
          own->Create(r::kConfigMaps, "default", ConfigMap("cm-" + std::to_string(i)));
        });
      }
      for (auto& w : writers) w.join();
    });
    EXPECT_TRUE(Eventually([&] { return added.load() == kWriters; }, std::chrono::seconds(20)))
        << added.load() << " of " << kWriters << " ADDED events arrived";
  }
}

TEST(OnePoolThreadTest, WatchAnsweredWithAnErrorReturnsTheError) {
  ASSERT_TRUE(kTwoPoolThreads);
  FakeCluster cluster;
  auto client = cluster.NewClient();
  cluster.InjectFailures({{{"verb", "watch"}, {"resource", "configmaps"}, {"code", 503}}});
  const OnePoolThreadTaken taken;
  WithinOrExit("a watch answered with 503", std::chrono::seconds(60), [&] {
    try {
      client->Watch(r::kConfigMaps, "default", {}, [](const WatchEvent&) {}, {});
      ADD_FAILURE() << "a watch answered with 503 returned normally";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.http_code(), 503);
    }
  });
}

}  // namespace
}  // namespace autodist::kube
