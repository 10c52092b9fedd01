#include "runtime/common/file_io.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/common/error.h"

namespace autodist {

std::string ReadFileBytes(const std::string& path, const std::string& what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  AD_CHECK(std::filesystem::exists(status), kNotFound, "{} file '{}' does not exist", what, path);
  AD_CHECK(std::filesystem::is_regular_file(status), kInvalidArgument,
           "{} file '{}' is not a regular file", what, path);
  std::ifstream in(path, std::ios::binary);
  AD_CHECK(in.good(), kInvalidArgument, "cannot open {} file '{}': {}", what, path,
           std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  AD_CHECK(!in.bad(), kInvalidArgument, "cannot read {} file '{}'", what, path);
  return std::move(buffer).str();
}

void WriteFileBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  AD_CHECK(out.good(), kInvalidArgument, "cannot open '{}' for writing: {}", path,
           std::strerror(errno));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  AD_CHECK(!out.fail(), kInvalidArgument, "cannot write '{}': {}", path, std::strerror(errno));
}

}  // namespace autodist
