#include "runtime/common/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

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
  // One allocation of the size the file has, then reads into it: streaming through an
  // ostringstream grew the buffer by doubling, and the copies and frees cost as much as the
  // read (a model of 1 MB, read per job by the operator). A file that grows meanwhile is read
  // to its end below.
  std::string bytes(std::filesystem::file_size(path, ec), '\0');
  if (ec) bytes.clear();
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (in.good()) {
    std::array<char, 4096> chunk{};
    while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
      bytes.append(chunk.data(), static_cast<size_t>(in.gcount()));
    }
  }
  AD_CHECK(!in.bad(), kInvalidArgument, "cannot read {} file '{}'", what, path);
  return bytes;
}

void ReadFileRange(const std::string& path, int64_t offset, void* out, size_t size,
                   const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  AD_CHECK(fd >= 0, kNotFound, "{}: cannot open '{}': {}", what, path, std::strerror(errno));
  // One pass from start to end: a larger read-ahead window keeps the disk busy while the pages
  // already read are copied out.
  ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_SEQUENTIAL);
  auto* cursor = static_cast<char*>(out);
  size_t done = 0;
  while (done < size) {
    // 16 MiB per call, as `dd bs=16M` reads: one call for a whole large tensor was slower here
    // (cold cache, 2.4 GB), and Linux moves at most 0x7ffff000 bytes per call anyway.
    constexpr size_t kPiece = size_t{16} << 20;
    const ssize_t got = ::pread(fd, cursor + done, std::min(kPiece, size - done),
                                static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = errno;
      ::close(fd);
      AD_CHECK(got == 0, kInvalidArgument, "{}: cannot read '{}' at byte {}: {}", what, path,
               offset + static_cast<int64_t>(done), std::strerror(error));
      Fail(ErrorCode::kInvalidArgument, "{}: '{}' ends at byte {}; expected {} bytes from {}", what,
           path, offset + static_cast<int64_t>(done), size, offset);
    }
    done += static_cast<size_t>(got);
  }
  ::close(fd);
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
