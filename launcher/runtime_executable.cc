#include "launcher/runtime_executable.h"

#include <unistd.h>

#include <filesystem>

#include "runtime/common/error.h"

namespace autodist::launcher {

std::string RuntimeExecutable(const std::string& given) {
  std::string runtime = given;
  if (runtime.empty()) {
    std::error_code error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
    runtime = error ? std::string("autodist-runtime")
                    : (self.parent_path() / "autodist-runtime").string();
  }
  AD_CHECK(::access(runtime.c_str(), X_OK) == 0, kNotFound,
           "the runtime executable '{}' does not exist or is not executable (give --runtime)",
           runtime);
  return runtime;
}

}  // namespace autodist::launcher
