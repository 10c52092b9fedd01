// The Gloo communicator when ranks disagree or fail: mismatched sizes are an error on every rank
// naming the tag; a rank that stops taking part makes the others fail within the timeout, never
// hang; the rendezvous through the coordinator's store (a real CoordinatorService on
// 127.0.0.1:0).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/collective/abort_list.h"
#include "runtime/collective/gloo/communicator.h"
#include "runtime/collective/gloo/store_adapter.h"
#include "runtime/coordinator/client.h"
#include "runtime/coordinator/rendezvous_store.h"
#include "runtime/coordinator/service.h"
#include "runtime/rpc/grpc_helpers.h"
#include "tests/collective/gloo_test_util.h"

namespace autodist::collective {
namespace {

using std::chrono::milliseconds;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunRanks;
using Clock = std::chrono::steady_clock;
using coordinator::CoordinatorClient;
using coordinator::CoordinatorService;
using coordinator::MemberInfo;
using coordinator::MemberRole;
using coordinator::RegisterResult;

constexpr milliseconds kShortTimeout{2000};

GlooOptions WithTimeout(milliseconds timeout) {
  GlooOptions options;
  options.timeout = timeout;
  return options;
}

// Counts ranks that are done, so that a rank can wait for the others with its communicator still
// open (as a hung process would).
class Latch {
 public:
  void CountDown() {
    std::lock_guard lock(mutex_);
    ++done_;
    changed_.notify_all();
  }
  void WaitFor(int count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, std::chrono::seconds(20), [&] { return done_ >= count; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int done_ = 0;
};

TEST(GlooFailureTest, MismatchedCountsFailOnEveryRankNamingTheTagAndTheCounts) {
  const auto errors = RunRanks(3, [](Communicator& comm) {
    const size_t count = comm.rank() == 1 ? 999 : 1000;
    std::vector<float> data(1000, 1.0F);
    try {
      comm.AllReduceSum(data.data(), count, ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                        "grads-7");
      ADD_FAILURE() << "rank " << comm.rank() << ": no error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      EXPECT_THAT(
          error.what(),
          AllOf(HasSubstr(fmt::format("AllReduceSum 'grads-7' (rank {} of 3)", comm.rank())),
                HasSubstr("element counts differ across ranks"),
                HasSubstr(fmt::format("this rank has {} elements", count))));
      EXPECT_THAT(error.what(), HasSubstr(comm.rank() == 1 ? "rank 0: 1000 elements, rank 2: 1000"
                                                           : "rank 1: 999 elements"));
    }
    // Every rank saw the same records, so the communicator is still in step and usable.
    comm.AllReduceSum(data.data(), 1000, ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                      "grads-7");
    EXPECT_THAT(data, ::testing::Each(3.0F));
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST(GlooFailureTest, DifferentCollectivesTypesOrRootsAreErrorsOnEveryRank) {
  const auto errors = RunRanks(2, [](Communicator& comm) {
    std::vector<float> data(16, 1.0F);
    std::vector<float> out(32);
    auto expect_error = [&](const std::function<void()>& call, const std::string& text) {
      try {
        call();
        ADD_FAILURE() << "rank " << comm.rank() << ": no error, expected " << text;
      } catch (const Error& error) {
        EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
        EXPECT_THAT(error.what(), HasSubstr(text));
      }
    };
    expect_error(
        [&] {
          if (comm.rank() == 0) {
            comm.AllGather(data.data(), 16, ElementType::kFloat32, out.data(), "step-3");
          } else {
            comm.AllReduceSum(data.data(), 16, ElementType::kFloat32, AllReduceAlgorithm::kRing,
                              "step-3");
          }
        },
        "collectives differ across ranks");
    expect_error(
        [&] {
          comm.AllReduceSum(data.data(), 8,
                            comm.rank() == 0 ? ElementType::kFloat32 : ElementType::kFloat16,
                            AllReduceAlgorithm::kRing, "mixed");
        },
        "element types differ across ranks");
    expect_error([&] { comm.Broadcast(data.data(), 64, comm.rank(), "weights"); },
                 "broadcast roots differ across ranks");
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

// kAuto is checked as the algorithm each rank resolves it to: here rank 1's thresholds send a
// 4 KiB all-reduce to halving-doubling while rank 0 runs recursive doubling.
TEST(GlooFailureTest, RanksWhoseAutoResolvesDifferentlyFailNamingBothAlgorithms) {
  const auto errors = RunRanks(
      2,
      [](Communicator& comm) {
        std::vector<float> data(1024, 1.0F);
        try {
          comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32,
                            AllReduceAlgorithm::kAuto, "grads");
          ADD_FAILURE() << "rank " << comm.rank() << ": no error";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
          EXPECT_THAT(error.what(), HasSubstr("all-reduce algorithms differ across ranks"));
          EXPECT_THAT(error.what(), HasSubstr("RecursiveDoubling"));
          EXPECT_THAT(error.what(), HasSubstr("HalvingDoubling"));
        }
      },
      {}, nullptr,
      [](int rank, GlooOptions& options) {
        options.auto_recursive_doubling_max_bytes = rank == 0 ? 65536 : 0;
      });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

// Three ranks run `algorithm` once; then rank 2 stops taking part (its connections stay open, as
// in a hung process) and the others' next call must fail within the timeout.
void ExpectTheOthersFailWhenARankStops(AllReduceAlgorithm algorithm) {
  Latch others_done;
  const auto errors = RunRanks(
      3,
      [&](Communicator& comm) {
        std::vector<float> data(100000, 1.0F);
        comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, algorithm, "grads");
        if (comm.rank() == 2) {
          // Hangs: keeps its connections open but never calls again.
          others_done.WaitFor(2);
          return;
        }
        const Clock::time_point started = Clock::now();
        try {
          comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, algorithm, "grads");
          ADD_FAILURE() << "rank " << comm.rank() << ": no error";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
          EXPECT_THAT(error.what(),
                      HasSubstr(fmt::format("AllReduceSum 'grads' (rank {} of 3)", comm.rank())));
        }
        EXPECT_LT(testing::Seconds(Clock::now() - started), 2.0 + 1.5);
        // A broken communicator says so at once.
        try {
          comm.Barrier("after");
          ADD_FAILURE() << "rank " << comm.rank() << ": no error after the failure";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
          EXPECT_THAT(error.what(), HasSubstr("failed earlier"));
        }
        others_done.CountDown();
      },
      WithTimeout(kShortTimeout));
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST(GlooFailureTest, ARankThatStopsTakingPartFailsTheOthersWithinTheTimeoutInTheRing) {
  ExpectTheOthersFailWhenARankStops(AllReduceAlgorithm::kRing);
}

TEST(GlooFailureTest, ARankThatStopsTakingPartFailsTheOthersWithinTheTimeoutInHalvingDoubling) {
  ExpectTheOthersFailWhenARankStops(AllReduceAlgorithm::kHalvingDoubling);
}

TEST(GlooFailureTest, ARankThatStopsTakingPartFailsTheOthersWithinTheTimeoutInRecursiveDoubling) {
  ExpectTheOthersFailWhenARankStops(AllReduceAlgorithm::kRecursiveDoubling);
}

TEST(GlooFailureTest, ARankThatGoesAwayFailsTheOthersAtOnce) {
  const auto errors = RunRanks(
      3,
      [&](Communicator& comm) {
        comm.Barrier("start");
        if (comm.rank() == 1) return;  // its communicator closes, as when its process dies
        const Clock::time_point started = Clock::now();
        std::vector<float> data(1000, 1.0F);
        try {
          comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32,
                            AllReduceAlgorithm::kHalvingDoubling, "grads");
          ADD_FAILURE() << "rank " << comm.rank() << ": no error";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
          EXPECT_THAT(error.what(), HasSubstr("AllReduceSum 'grads'"));
        }
        EXPECT_LT(testing::Seconds(Clock::now() - started), 5.0);  // well within the 30 s
      },
      WithTimeout(milliseconds(30000)));
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

// The heartbeat's abort: rank 0 waits in an all-reduce for rank 1, which hangs (its connections
// open, as in a stuck process); the job's abort list ends rank 0's call with the reason, long
// before the timeout, and rank 1's next call finds the links shut.
void ExpectAnAbortEndsTheCallInFlight(AllReduceAlgorithm algorithm) {
  constexpr milliseconds kLongTimeout{60000};
  AbortList job_failed;
  Latch rank0_done;
  std::atomic<bool> rank0_listed{false};
  std::thread heartbeat([&] {
    const Clock::time_point until = Clock::now() + std::chrono::seconds(30);
    while (!rank0_listed && Clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
    std::this_thread::sleep_for(milliseconds(200));  // rank 0 is in its call by then
    EXPECT_EQ(job_failed.AbortAll("worker-1 missed its heartbeats"), 1U);
  });
  const auto errors = RunRanks(
      2,
      [&](Communicator& comm) {
        std::vector<float> data(100000, 1.0F);
        // Both check the tag once (the call check runs on Gloo's own allgather, which an abort
        // cannot interrupt); the next call goes straight to the links.
        comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, algorithm, "grads");
        if (comm.rank() == 1) {
          rank0_done.WaitFor(1);
          const Clock::time_point started = Clock::now();
          EXPECT_THROW(comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, algorithm,
                                         "grads"),
                       Error);
          EXPECT_LT(testing::Seconds(Clock::now() - started), 20.0);  // not the 60 s timeout
          return;
        }
        const AbortList::Entry entry = job_failed.Add(comm);
        rank0_listed = true;
        const Clock::time_point started = Clock::now();
        try {
          comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, algorithm, "grads");
          ADD_FAILURE() << "no error";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
          EXPECT_THAT(error.what(), AllOf(HasSubstr("AllReduceSum 'grads' (rank 0 of 2)"),
                                          HasSubstr("aborted: worker-1 missed its heartbeats")));
        }
        EXPECT_LT(testing::Seconds(Clock::now() - started), 20.0);
        try {
          comm.Barrier("after");
          ADD_FAILURE() << "no error after the abort";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
          EXPECT_THAT(error.what(), HasSubstr("aborted: worker-1 missed its heartbeats"));
        }
        rank0_done.CountDown();
      },
      WithTimeout(kLongTimeout));
  heartbeat.join();
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
  EXPECT_EQ(job_failed.size(), 0U);  // the entry went with rank 0's scope
}

TEST(GlooFailureTest, AnAbortEndsRecursiveDoublingInFlightNamingTheReason) {
  ExpectAnAbortEndsTheCallInFlight(AllReduceAlgorithm::kRecursiveDoubling);
}

TEST(GlooFailureTest, AnAbortEndsHalvingDoublingInFlightNamingTheReason) {
  ExpectAnAbortEndsTheCallInFlight(AllReduceAlgorithm::kHalvingDoubling);
}

TEST(GlooFailureTest, ACallAfterAnAbortFailsAtOnceNamingTheReason) {
  const auto errors = RunRanks(2, [&](Communicator& comm) {
    comm.Barrier("start");
    comm.Abort("the coordinator is unreachable");
    comm.Abort("a second reason is ignored");
    std::vector<float> data(10, 1.0F);
    try {
      comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                        "grads");
      ADD_FAILURE() << "rank " << comm.rank() << ": no error";
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
      EXPECT_THAT(error.what(), HasSubstr("aborted: the coordinator is unreachable"));
      EXPECT_THAT(error.what(), Not(HasSubstr("second")));
    }
  });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST(GlooFailureTest, SizesChangedOnOneRankOnlyTimeOutInsteadOfMixingData) {
  // Rank 0 reuses the verified sizes of "grads", rank 1 changes them: rank 1 checks while rank 0
  // runs the collective. Neither may hang or take the other's bytes.
  const auto errors = RunRanks(
      2,
      [&](Communicator& comm) {
        std::vector<float> data(2000, 1.0F);
        comm.AllReduceSum(data.data(), 1000, ElementType::kFloat32, AllReduceAlgorithm::kRing,
                          "grads");
        const size_t count = comm.rank() == 1 ? 2000 : 1000;
        try {
          comm.AllReduceSum(data.data(), count, ElementType::kFloat32, AllReduceAlgorithm::kRing,
                            "grads");
          ADD_FAILURE() << "rank " << comm.rank() << ": no error";
        } catch (const Error& error) {
          EXPECT_EQ(error.code(), ErrorCode::kUnavailable) << error.what();
          EXPECT_THAT(error.what(), HasSubstr("AllReduceSum 'grads'"));
        }
      },
      WithTimeout(kShortTimeout));
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
}

TEST(GlooFailureTest, TheRendezvousTimesOutWhenARankNeverShowsUp) {
  GlooOptions options = WithTimeout(milliseconds(1000));
  options.rank = 0;
  options.size = 2;
  options.store = std::make_shared<gloo::rendezvous::HashStore>();
  options.prefix = "job-9";
  const Clock::time_point started = Clock::now();
  try {
    MakeGlooCommunicator(options);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("gloo communicator rank 0 of 2 (store prefix 'job-9')"));
  }
  EXPECT_LT(testing::Seconds(Clock::now() - started), 5.0);
}

TEST(GlooFailureTest, RanksRendezvousThroughTheCoordinator) {
  constexpr int kWorkers = 3;
  CoordinatorService service(
      strategy::ResourceSpec::FromReplicaCounts(
          {.workers = kWorkers, .parameter_servers = 0, .network_bandwidth = std::nullopt}),
      autodist::proto::Strategy(), "job-1");
  rpc::RpcServer server("127.0.0.1:0", {&service});
  auto client = std::make_shared<CoordinatorClient>(server.endpoint());
  std::vector<std::string> nodes(kWorkers);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kWorkers; ++i) {
      threads.emplace_back([&, i] {
        MemberInfo self;
        self.node = "worker-" + std::to_string(i);
        self.role = MemberRole::kWorker;
        self.pid = 100 + i;
        self.endpoint = "127.0.0.1:" + std::to_string(7000 + i);
        const RegisterResult result = client->Register(self, "job-1", milliseconds(10000));
        nodes[static_cast<size_t>(result.rank)] = self.node;
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  const auto errors = RunRanks(
      kWorkers,
      [](Communicator& comm) {
        std::vector<float> data(1000, static_cast<float>(comm.rank()));
        comm.AllReduceSum(data.data(), data.size(), ElementType::kFloat32,
                          AllReduceAlgorithm::kAuto, "grads");
        EXPECT_THAT(data, ::testing::Each(3.0F));  // 0 + 1 + 2
      },
      WithTimeout(milliseconds(10000)),
      [&](int rank) {
        return MakeGlooStore(
            coordinator::MakeCoordinatorRendezvous(client, nodes[static_cast<size_t>(rank)]));
      });
  for (const auto& error : errors) EXPECT_FALSE(error) << testing::Describe(error);
  service.Shutdown();
  server.Shutdown();
}

}  // namespace
}  // namespace autodist::collective
