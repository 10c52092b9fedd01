#include "runtime/rpc/grpc_helpers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "proto/coordinator.grpc.pb.h"

namespace autodist::rpc {
namespace {

using ::testing::HasSubstr;

TEST(RpcServer, PicksAFreePortAndRejectsAPortInUse) {
  autodist::proto::Coordinator::Service unused;  // any service will do
  RpcServer first("127.0.0.1:0", {&unused});
  ASSERT_GT(first.port(), 0);
  EXPECT_EQ(first.endpoint(), "127.0.0.1:" + std::to_string(first.port()));
  autodist::proto::Coordinator::Service other;
  try {
    RpcServer second(first.endpoint(), {&other});
    FAIL() << "a second server bound " << first.endpoint();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("cannot listen on " + first.endpoint()));
  }
}

TEST(RpcStatus, ErrorsRoundTripThroughStatus) {
  const grpc::Status status = ToStatus(Error(ErrorCode::kInvalidArgument, "bad shape of 'w'"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  try {
    ThrowRpcError(status, "parameter server ps-0: Step");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("parameter server ps-0: Step: bad shape of 'w'"));
  }
  try {
    ThrowRpcError(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"), "x");
    FAIL();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
  }
}

TEST(RpcServe, TurnsExceptionsIntoStatuses) {
  const grpc::Status status =
      Serve([]() -> grpc::Status { Fail(ErrorCode::kNotFound, "no tensor 'x'"); });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Serve([] { return grpc::Status::OK; }).error_code(), grpc::StatusCode::OK);
}

}  // namespace
}  // namespace autodist::rpc
