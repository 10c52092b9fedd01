// Helpers shared by the optimizer tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "runtime/common/error.h"

namespace autodist::optim::testing {

// The message of the InvalidArgument error `fn` throws ("" and a test failure when it throws
// none or another code).
template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "expected an InvalidArgument error";
  return "";
}

}  // namespace autodist::optim::testing
