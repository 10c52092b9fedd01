// Helpers shared by the data tests: fixture paths, scratch files and error checks.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/tensor/tensor.h"

namespace autodist::data::testing {

// tests/fixtures/data/<name> (written by tests/fixtures/data/generate.py).
inline std::string Fixture(const std::string& name) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/data/" + name;
}

// The scratch files this test program wrote; removed when it ends.
inline std::vector<std::string>& ScratchFiles() {
  static std::vector<std::string> files;
  return files;
}

class ScratchCleanup final : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& path : ScratchFiles()) std::remove(path.c_str());
    ScratchFiles().clear();
  }
};

// gtest owns the environment and tears it down after the last test of the program.
inline const bool kScratchCleanupRegistered =
    (::testing::AddGlobalTestEnvironment(new ScratchCleanup), true);  // NOLINT(cert-err58-cpp)

// Writes `bytes` to a file named after the running test and `name` (ctest runs tests as parallel
// processes, so names must not collide) and returns its path. The file is removed when the test
// program ends.
inline std::string ScratchFile(const std::string& name, const std::string& bytes) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string path = ::testing::TempDir() + "/autodist_data_" + info->test_suite_name() +
                           "_" + info->name() + "_" + std::to_string(getpid()) + "_" + name;
  WriteFileBytes(path, bytes);
  ScratchFiles().push_back(path);
  return path;
}

// Runs `body`, expects an autodist::Error with `code` whose message contains every `parts` entry.
inline void ExpectError(const std::function<void()>& body, ErrorCode code,
                        const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "expected an error containing '" << parts.front() << "'";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
          << "message: " << error.what() << "\nmissing: " << part;
    }
  }
}

// The elements of `array` as a vector of T (T must be its element type).
template <typename T>
std::vector<T> Values(const ::autodist::tensor::Tensor& array) {
  const T* data = array.data<T>();
  return std::vector<T>(data, data + array.numel());
}

}  // namespace autodist::data::testing
