// The coordinator's key-value store for the rendezvous of collectives: the bookkeeping
// (KeyValueStore) and StoreSet/StoreGet over real gRPC (a service on 127.0.0.1:0, members as
// client threads of this process).
#include "runtime/coordinator/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "runtime/coordinator/client.h"
#include "runtime/coordinator/service.h"
#include "runtime/rpc/grpc_helpers.h"

namespace autodist::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr milliseconds kWait{5000};  // long enough never to matter unless something hangs

Error ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorCode::kInternal, "no error");
}

TEST(KeyValueStoreTest, SetReplacesAndCountsBytes) {
  KeyValueStore store;
  store.Set("worker-0", "a", "123");
  store.Set("worker-0", "a", "12");
  store.Set("worker-1", "b", "");
  EXPECT_EQ(store.entries(), 2);
  EXPECT_EQ(store.total_bytes(), 1 + 2 + 1 + 0);
  EXPECT_THAT(store.Missing({"a", "c", "b", "d"}), ElementsAre("c", "d"));
  EXPECT_THAT(store.Get("worker-0", {"b", "a"}), ElementsAre("", "12"));
}

TEST(KeyValueStoreTest, EnforcesItsLimits) {
  KeyValueStore store({.max_key_bytes = 4,
                       .max_value_bytes = 8,
                       .max_entries = 2,
                       .max_total_bytes = 100,
                       .max_keys_per_get = 2,
                       .max_reply_bytes = 10});
  EXPECT_THAT(ErrorOf([&] { store.Set("worker-0", "", "x"); }).what(),
              HasSubstr("StoreSet: worker 'worker-0' sent an empty key"));
  EXPECT_THAT(ErrorOf([&] { store.Set("worker-0", "abcde", "x"); }).what(),
              HasSubstr("key 'abcde' has 5 bytes; keys may have at most 4"));
  EXPECT_THAT(ErrorOf([&] { store.Set("worker-0", "k", "123456789"); }).what(),
              HasSubstr("the value of key 'k' has 9 bytes; values may have at most 8"));
  store.Set("worker-0", "k1", "12345678");
  store.Set("worker-0", "k2", "12345678");
  const Error full = ErrorOf([&] { store.Set("worker-1", "k3", "1"); });
  EXPECT_EQ(full.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(full.what(), HasSubstr("would take the store to 3 keys"));
  store.Set("worker-1", "k2", "1");  // replacing does not add an entry
  EXPECT_THAT(ErrorOf([&] {
                store.CheckGet("worker-1", {"k1", "k2", "k3"});
              }).what(),
              HasSubstr("asked for 3 keys; one call may ask for at most 2"));
  EXPECT_THAT(ErrorOf([&] { store.CheckGet("worker-1", {}); }).what(),
              HasSubstr("asked for no key"));
  store.Set("worker-1", "k2", "12345678");
  EXPECT_THAT(ErrorOf([&] {
                store.Get("worker-1", {"k1", "k2"});
              }).what(),
              HasSubstr("hold more than 10 bytes"));
}

class CoordinatorStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    service_ = std::make_unique<CoordinatorService>(
        strategy::ResourceSpec::FromReplicaCounts({.workers = 2, .parameter_servers = 1}),
        autodist::proto::Strategy(), "job-1");
    server_ = std::make_unique<rpc::RpcServer>("127.0.0.1:0",
                                               std::vector<grpc::Service*>{service_.get()});
    client_ = std::make_unique<CoordinatorClient>(server_->endpoint());
    std::vector<std::future<RegisterResult>> registered;
    int64_t pid = 100;
    for (const char* node : {"worker-0", "worker-1", "ps-0"}) {
      MemberInfo self;
      self.node = node;
      self.role = node[0] == 'p' ? MemberRole::kParameterServer : MemberRole::kWorker;
      self.pid = pid++;
      self.endpoint = "10.0.0.1:" + std::to_string(7000 + self.pid);
      registered.push_back(std::async(
          std::launch::async, [this, self] { return client_->Register(self, "job-1", kWait); }));
    }
    for (auto& result : registered) result.get();
  }

  void TearDown() override {
    service_->Shutdown();
    server_.reset();
    service_.reset();
  }

  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<rpc::RpcServer> server_;
  std::unique_ptr<CoordinatorClient> client_;
};

TEST_F(CoordinatorStoreTest, SetThenGetReturnsTheValuesInKeyOrder) {
  client_->StoreSet("worker-0", "gloo/rank-0", std::string("\0addr0", 6));
  client_->StoreSet("worker-1", "gloo/rank-1", "addr1");
  EXPECT_THAT(client_->StoreGet("worker-1", {"gloo/rank-1", "gloo/rank-0"}, kWait),
              ElementsAre("addr1", std::string("\0addr0", 6)));
}

TEST_F(CoordinatorStoreTest, GetWaitsUntilEveryKeyIsSet) {
  client_->StoreSet("worker-0", "a", "1");
  auto got = std::async(std::launch::async, [&] {
    return client_->StoreGet("worker-0", {"a", "b"}, kWait);
  });
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(got.wait_for(milliseconds(0)), std::future_status::timeout) << "returned before 'b'";
  client_->StoreSet("worker-1", "b", "2");
  EXPECT_THAT(got.get(), ElementsAre("1", "2"));
}

TEST_F(CoordinatorStoreTest, GetTimesOutNamingTheMissingKeys) {
  client_->StoreSet("worker-0", "rank-0", "x");
  const Error error = ErrorOf([&] {
    client_->StoreGet("worker-1", {"rank-0", "rank-1", "rank-2"}, milliseconds(200));
  });
  EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  EXPECT_THAT(error.what(), HasSubstr("StoreGet: worker 'worker-1': timed out after 0.2 s "
                                      "waiting for keys 'rank-1', 'rank-2' to be set"));
}

TEST_F(CoordinatorStoreTest, RejectsOversizedValuesAndKeysAndStrangers) {
  const Error value = ErrorOf(
      [&] { client_->StoreSet("worker-0", "big", std::string((size_t{1} << 20) + 1, 'x')); });
  EXPECT_EQ(value.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(value.what(), HasSubstr("the value of key 'big' has 1048577 bytes; values may "
                                      "have at most 1048576"));
  const Error key = ErrorOf([&] { client_->StoreSet("worker-0", std::string(1025, 'k'), "x"); });
  EXPECT_EQ(key.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(key.what(), HasSubstr("keys may have at most 1024"));
  EXPECT_EQ(ErrorOf([&] { client_->StoreSet("worker-9", "a", "x"); }).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_THAT(ErrorOf([&] { client_->StoreGet("ps-0", {"a"}, kWait); }).what(), HasSubstr("ps-0"));
}

TEST_F(CoordinatorStoreTest, AWaitingGetEndsWhenTheJobFails) {
  auto got = std::async(std::launch::async, [&] {
    return ErrorOf([&] { client_->StoreGet("worker-0", {"never"}, kWait); });
  });
  std::this_thread::sleep_for(milliseconds(100));
  client_->Abort("worker-1 died");
  const Error error = got.get();
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), HasSubstr("worker-1 died"));
}

}  // namespace
}  // namespace autodist::coordinator
