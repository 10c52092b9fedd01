// Helpers shared by the job tests: fixture manifests and the message of an expected error.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "runtime/common/error.h"

namespace autodist::job::testing {

inline const std::string kJobFixtures = std::string(AUTODIST_FIXTURES_DIR) + "/jobs";

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `body`, which must throw autodist::Error with `code`; returns the message ("" and a test
// failure when nothing is thrown).
template <typename Body>
std::string ErrorOf(Body body, ErrorCode code = ErrorCode::kInvalidArgument) {
  try {
    body();
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "expected an autodist::Error";
  return "";
}

}  // namespace autodist::job::testing
