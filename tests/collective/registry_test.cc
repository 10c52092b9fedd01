// The communicator registry: a job picks its backend by name ("gloo" on CPU) with options every
// backend understands, and the ranks meet through any RendezvousStore; an unknown backend or a
// missing store is an error that says what there is.
#include "runtime/collective/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/common/error.h"

namespace autodist::collective {
namespace {

using ::testing::HasSubstr;

// A RendezvousStore in this process's memory: what the coordinator's store is to a job.
class MemoryStore final : public RendezvousStore {
 public:
  void Set(const std::string& key, const std::string& value) override {
    {
      const std::lock_guard lock(mutex_);
      values_[key] = value;
    }
    changed_.notify_all();
  }

  std::vector<std::string> Get(const std::vector<std::string>& keys,
                               std::chrono::milliseconds wait) override {
    std::unique_lock lock(mutex_);
    const bool all = changed_.wait_for(lock, wait, [&] {
      for (const std::string& key : keys) {
        if (!values_.contains(key)) return false;
      }
      return true;
    });
    AD_CHECK(all, kUnavailable, "memory store: keys missing after {} ms", wait.count());
    std::vector<std::string> values;
    for (const std::string& key : keys) values.push_back(values_.at(key));
    return values;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

TEST(CommunicatorRegistryTest, GlooIsRegistered) {
  EXPECT_THAT(RegisteredCommunicators(), ::testing::Contains("gloo"));
}

TEST(CommunicatorRegistryTest, TwoRanksMeetThroughAStoreAndSum) {
  const auto store = std::make_shared<MemoryStore>();
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

TEST(CommunicatorRegistryTest, UnknownBackendAndMissingStoreAreErrors) {
  CommunicatorOptions options;
  options.rendezvous = std::make_shared<MemoryStore>();
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
