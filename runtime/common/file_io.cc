#include "runtime/common/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "runtime/common/direct_io.h"
#include "runtime/common/error.h"
#include "runtime/common/file_descriptor.h"

namespace autodist {

namespace {

// True unless most of [offset, offset + size) of `fd` is known to be out of the page cache. A
// file another process has just read (the workers of one machine loading the same model) is
// read from memory; one nobody has, from the disk directly.
bool MostlyCached(int fd, int64_t offset, size_t size) {
  const auto page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  const int64_t start = offset / page * page;
  const auto length = static_cast<size_t>(offset - start) + size;
  void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  if (map == MAP_FAILED) return true;  // cannot tell: the page cache, as for small reads
  std::vector<unsigned char> pages((length + static_cast<size_t>(page) - 1) /
                                   static_cast<size_t>(page));
  const bool known = ::mincore(map, length, pages.data()) == 0;
  ::munmap(map, length);
  if (!known) return true;
  const auto resident = static_cast<size_t>(
      std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1U) != 0; }));
  return 2 * resident >= pages.size();
}

// Reads bytes [from, to) of the range of `size` bytes at `offset` of `fd` through the page cache
// into out + from; errors name the whole range.
void ReadCached(int fd, const std::string& path, int64_t offset, char* out, size_t size,
                size_t from, size_t to, const std::string& what) {
  size_t done = from;
  while (done < to) {
    const ssize_t got = ::pread(fd, out + done, std::min(kIoPieceBytes, to - done),
                                static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      AD_CHECK(got == 0, kInvalidArgument, "{}: cannot read '{}' at byte {}: {}", what, path,
               offset + static_cast<int64_t>(done), std::strerror(errno));
      Fail(ErrorCode::kInvalidArgument, "{}: '{}' ends at byte {}; expected {} bytes from {}", what,
           path, offset + static_cast<int64_t>(done), size, offset);
    }
    done += static_cast<size_t>(got);
  }
}

// Reads up to `size` bytes (whole blocks, at a block-aligned `offset`) of `path` with direct
// I/O into `out`, and returns how many it read: fewer when the file system refuses direct I/O
// or the file ends, and the caller reads the rest through the page cache (which reports the
// errors). Memory that is not block-aligned is filled through an aligned buffer.
size_t ReadDirect(const std::string& path, int64_t offset, char* out, size_t size) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
  if (fd.get() < 0) return 0;
  DirectIoBuffer bounce;
  size_t done = 0;
  while (done < size) {
    const size_t piece = std::min(kIoPieceBytes, size - done);
    char* target = out + done;
    const bool bounced = !IsBlockAligned(target);
    if (bounced) {
      target = bounce.Get();
      if (target == nullptr) return done;
    }
    const ssize_t got =
        ::pread(fd.get(), target, piece, static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return done;
    if (bounced) std::memcpy(out + done, target, static_cast<size_t>(got));
    done += static_cast<size_t>(got);
    if (static_cast<size_t>(got) != piece) return done;
  }
  return done;
}

}  // namespace

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
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  AD_CHECK(fd.get() >= 0, kNotFound, "{}: cannot open '{}': {}", what, path, std::strerror(errno));
  // One pass from start to end: a larger read-ahead window keeps the disk busy while the pages
  // already read are copied out.
  ::posix_fadvise(fd.get(), static_cast<off_t>(offset), static_cast<off_t>(size),
                  POSIX_FADV_SEQUENTIAL);
  auto* bytes = static_cast<char*>(out);
  size_t done = 0;
  // A large range that is not in the page cache goes from the disk straight into `out`: through
  // the page cache, the kernel's copy out of it took as long as the disk (a 2.4 GB model: 77%
  // of the load), and the pages it kept would only push others out. The head up to a block
  // boundary and the tail after the last whole block go through the page cache.
  const size_t head = (kDirectIoBlockBytes - static_cast<size_t>(offset) % kDirectIoBlockBytes) %
                      kDirectIoBlockBytes;
  if (size >= kDirectReadMinBytes && head < size && !MostlyCached(fd.get(), offset, size)) {
    ReadCached(fd.get(), path, offset, bytes, size, 0, head, what);
    const size_t body = (size - head) / kDirectIoBlockBytes * kDirectIoBlockBytes;
    done = head + ReadDirect(path, offset + static_cast<int64_t>(head), bytes + head, body);
  }
  ReadCached(fd.get(), path, offset, bytes, size, done, size, what);
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
