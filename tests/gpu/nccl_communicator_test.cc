// The NCCL communicator on one GPU (NCCL refuses two ranks on one device): set-up through a
// rendezvous store as the coordinator's, then every collective of a 1-rank communicator against
// the values expected, the call check, and an Abort. A 1-rank communicator only copies: it
// checks the set-up and the calls, not multi-rank sums, overlap across ranks or a peer's death
// (docs/gpu.md lists those as unverified). Without a GPU every test is SKIPPED.
#include "gpu/collective/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "gpu/device/cuda_error.h"
#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/collective/registry.h"
#include "runtime/common/error.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::gpu {
namespace {

using collective::AllReduceAlgorithm;
using collective::ElementType;
using ::testing::HasSubstr;

using testing::DeviceArray;

collective::CommunicatorOptions OneRank() {
  collective::CommunicatorOptions options;
  options.rank = 0;
  options.size = 1;
  options.rendezvous = std::make_shared<collective::MemoryRendezvousStore>();
  options.prefix = "test";
  options.device = 0;
  options.connect_timeout = std::chrono::seconds(60);
  options.timeout = std::chrono::seconds(60);
  return options;
}

TEST(NcclCommunicatorTest, SetUpThroughTheRegistryAndEveryCollectiveOnOneRank) {
  AUTODIST_SKIP_WITHOUT_GPU();
  const collective::CommunicatorOptions options = OneRank();
  const std::unique_ptr<collective::Communicator> comm =
      collective::MakeCommunicator("nccl", options);
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  // The unique id went through the store, as rank 0 publishes it for the others.
  EXPECT_EQ(options.rendezvous->Get({"test/nccl-unique-id"}, std::chrono::seconds(1)).size(), 1);

  std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), -500.0F);
  DeviceArray<float> sum(values);
  comm->AllReduceSum(sum.get(), values.size(), ElementType::kFloat32, AllReduceAlgorithm::kAuto,
                     "grads");
  EXPECT_EQ(sum.Read(), values);  // one rank: the sum is its own data, bit for bit

  DeviceArray<int64_t> counters(std::vector<int64_t>{1, -2, int64_t{1} << 40});
  comm->AllReduceSum(counters.get(), 3, ElementType::kInt64, AllReduceAlgorithm::kRing, "counts");
  EXPECT_EQ(counters.Read(), (std::vector<int64_t>{1, -2, int64_t{1} << 40}));

  DeviceArray<float> gathered(std::vector<float>(values.size(), 0.0F));
  comm->AllGather(sum.get(), values.size(), ElementType::kFloat32, gathered.get(), "gather");
  EXPECT_EQ(gathered.Read(), values);

  std::vector<std::byte> host;
  const std::vector<size_t> counts =
      comm->AllGatherV(sum.get(), 7, ElementType::kFloat32, host, "sparse-rows");
  EXPECT_EQ(counts, std::vector<size_t>{7});
  ASSERT_EQ(host.size(), 7 * sizeof(float));
  std::vector<float> first(7);
  std::memcpy(first.data(), host.data(), host.size());
  EXPECT_EQ(first, std::vector<float>(values.begin(), values.begin() + 7));
  // Another count under the same tag: the counts are exchanged on every call.
  EXPECT_EQ(comm->AllGatherV(sum.get(), 0, ElementType::kFloat32, host, "sparse-rows"),
            std::vector<size_t>{0});
  EXPECT_TRUE(host.empty());

  DeviceArray<float> scattered(std::vector<float>(values.size(), 0.0F));
  comm->ReduceScatterSum(sum.get(), scattered.get(), values.size(), ElementType::kFloat32,
                         "shards");
  EXPECT_EQ(scattered.Read(), values);  // one rank: its one block
  comm->ReduceScatterSum(sum.get(), sum.get(), values.size(), ElementType::kFloat32, "shards");
  EXPECT_EQ(sum.Read(), values);  // in place

  DeviceArray<float> weights(values);
  comm->Broadcast(weights.get(), values.size() * sizeof(float), 0, "weights");
  EXPECT_EQ(weights.Read(), values);
  comm->Barrier("step");
  EXPECT_GT(comm->bytes_sent() + comm->bytes_received(), -1);  // one rank moves nothing
}

TEST(NcclCommunicatorTest, BadCallsAreRefusedNamingTheCallAndLeaveTheCommunicatorUsable) {
  AUTODIST_SKIP_WITHOUT_GPU();
  NcclCommunicator comm(OneRank());
  try {
    comm.Broadcast(nullptr, 16, 1, "weights");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("Broadcast 'weights' (rank 0 of 1): root 1 is not a rank"));
  }
  try {
    comm.AllReduceSum(nullptr, 4, ElementType::kFloat32, AllReduceAlgorithm::kAuto, "grads");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("data must not be null"));
  }
  comm.Barrier("still-usable");
}

TEST(NcclCommunicatorTest, AnAbortFailsTheNextCallAndEveryLaterOne) {
  AUTODIST_SKIP_WITHOUT_GPU();
  NcclCommunicator comm(OneRank());
  comm.Barrier("before");
  comm.Abort("worker-1 missed the heartbeat deadline");
  try {
    comm.Barrier("after");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("aborted: worker-1 missed the heartbeat deadline"));
  }
  try {
    comm.Barrier("later");
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(), HasSubstr("failed earlier"));
  }
}

TEST(NcclCommunicatorTest, ARankOutsideTheSizeIsRefusedBeforeAnySetUp) {
  collective::CommunicatorOptions options = OneRank();
  options.rank = 1;
  try {
    NcclCommunicator comm(options);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("rank 1 of 1: expected 0 <= rank < size"));
  }
}

}  // namespace
}  // namespace autodist::gpu
