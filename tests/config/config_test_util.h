// Shared by the config tests: the message of the InvalidArgument error a body throws.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "runtime/common/error.h"

namespace autodist::config {

// The message of the error `body` throws; a failure unless it throws InvalidArgument.
inline std::string MessageOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace autodist::config
