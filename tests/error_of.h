// The autodist::Error an action throws, for tests that check an error's code and message.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "runtime/common/error.h"

namespace autodist::testing {

// The Error thrown by `action`; fails the test (and returns an Internal error) when it throws
// none.
inline Error ErrorOf(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an autodist::Error";
  return Error(ErrorCode::kInternal, "no error was thrown");
}

}  // namespace autodist::testing
