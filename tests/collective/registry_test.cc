// The communicator registry: a job picks its backend by name ("gloo" on CPU) with options every
// backend understands, and the ranks meet through any RendezvousStore; an unknown backend or a
// missing store is an error that says what there is.
#include "runtime/collective/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/collective/memory_rendezvous_store.h"
#include "runtime/common/error.h"

namespace autodist::collective {
namespace {

using ::testing::HasSubstr;

TEST(CommunicatorRegistryTest, GlooIsRegistered) {
  EXPECT_THAT(RegisteredCommunicators(), ::testing::Contains("gloo"));
}

TEST(CommunicatorRegistryTest, TwoRanksMeetThroughAStoreAndSum) {
  const auto store = std::make_shared<MemoryRendezvousStore>();
  std::vector<std::vector<float>> results(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      CommunicatorOptions options;
      options.rank = rank;
      options.size = 2;
      options.rendezvous = store;
      options.prefix = "registry-test";
      options.connect_timeout = std::chrono::seconds(30);
      const std::unique_ptr<Communicator> communicator = MakeCommunicator("gloo", options);
      std::vector<float> data = {1.0F + static_cast<float>(rank), 10.0F};
      communicator->AllReduceSum(data.data(), data.size(), ElementType::kFloat32,
                                 AllReduceAlgorithm::kAuto, "sum");
      results[static_cast<size_t>(rank)] = data;
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_EQ(results[0], (std::vector<float>{3.0F, 20.0F}));
  EXPECT_EQ(results[1], results[0]);
}

TEST(MemoryRendezvousStoreTest, ValuesComeInOrderAndMissingKeysAreNamed) {
  MemoryRendezvousStore store;
  store.Set("b", "2");
  store.Set("a", "1");
  EXPECT_EQ(store.Get({"a", "b"}, std::chrono::milliseconds(0)),
            (std::vector<std::string>{"1", "2"}));
  try {
    store.Get({"a", "c"}, std::chrono::milliseconds(20));
    ADD_FAILURE() << "a missing key was found";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("keys c missing after 20 ms"));
  }
}

TEST(CommunicatorRegistryTest, UnknownBackendAndMissingStoreAreErrors) {
  CommunicatorOptions options;
  options.rendezvous = std::make_shared<MemoryRendezvousStore>();
  try {
    MakeCommunicator("nccl-on-cpu", options);
    ADD_FAILURE() << "an unknown backend was made";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("no communicator backend 'nccl-on-cpu' in this build; "
                                        "registered: gloo"));
  }
  options.rendezvous = nullptr;
  try {
    MakeCommunicator("gloo", options);
    ADD_FAILURE() << "a communicator without a store was made";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("no rendezvous store"));
  }
}

}  // namespace
}  // namespace autodist::collective
