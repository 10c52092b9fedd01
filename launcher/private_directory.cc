#include "launcher/private_directory.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "runtime/common/error.h"

namespace autodist::launcher {

namespace fs = std::filesystem;

PrivateDirectory::PrivateDirectory(const std::string& prefix, const std::string& what) {
  std::error_code error;
  fs::path base = fs::temp_directory_path(error);
  if (error) base = "/tmp";
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  AD_CHECK(mkdtemp(pattern.data()) != nullptr, kInvalidArgument,
           "cannot make a private directory for {} under '{}': {}", what, base.string(),
           std::strerror(errno));
  path_ = pattern;
}

PrivateDirectory::~PrivateDirectory() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace autodist::launcher
