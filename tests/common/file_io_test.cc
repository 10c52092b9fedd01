#include "runtime/common/file_io.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist {
namespace {

// A file of random bytes, larger than kDirectReadMinBytes and not a whole number of blocks.
class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "file_io_test_" + std::to_string(::getpid()) + ".bin";
    bytes_.resize(kDirectReadMinBytes * 2 + 12345);
    std::mt19937 rng(11);
    for (char& b : bytes_) b = static_cast<char>(rng());
    WriteFileBytes(path_, bytes_);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Flushes the file and asks the kernel to drop it from the page cache; false where the
  // file system keeps it in memory regardless (tmpfs).
  bool Evict() const {
    const int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    return ResidentPages(0, bytes_.size()) == 0;
  }

  // How many pages of [offset, offset + size) are in the page cache.
  size_t ResidentPages(size_t offset, size_t size) const {
    const int fd = ::open(path_.c_str(), O_RDONLY);
    EXPECT_GE(fd, 0);
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t start = offset / page * page;
    const size_t length = offset - start + size;
    void* map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
    ::close(fd);
    EXPECT_NE(map, MAP_FAILED);
    std::vector<unsigned char> pages((length + page - 1) / page);
    EXPECT_EQ(::mincore(map, length, pages.data()), 0);
    ::munmap(map, length);
    size_t resident = 0;
    for (const unsigned char p : pages) resident += p & 1U;
    return resident;
  }

  std::string Expected(size_t offset, size_t size) const { return bytes_.substr(offset, size); }

  std::string path_;
  std::string bytes_;
};

// Unaligned file offset and unaligned memory: the head, the body through the aligned buffer,
// and the tail all land where they belong.
TEST_F(FileIoTest, ColdUnalignedRangeIsReadExactly) {
  const bool evicted = Evict();
  const size_t offset = 4096 + 17;
  const size_t size = kDirectReadMinBytes + 8191;
  std::string out(size + 1, '\0');
  ReadFileRange(path_, static_cast<int64_t>(offset), out.data() + 1, size, "test data");
  EXPECT_EQ(out.substr(1), Expected(offset, size));
  if (!evicted) GTEST_SKIP() << "the file system keeps this file in memory (no direct I/O)";
  // Read from the disk directly: the whole blocks of the range stay out of the page cache.
  EXPECT_LE(ResidentPages(offset, size), 4U);
}

// Block-aligned offset and memory: the body goes straight into the destination.
TEST_F(FileIoTest, ColdAlignedRangeIsReadExactly) {
  const bool evicted = Evict();
  const size_t offset = 8192;
  const size_t size = kDirectReadMinBytes + 100;
  struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
  };
  const std::unique_ptr<char, FreeDeleter> out(
      static_cast<char*>(std::aligned_alloc(4096, size + 4096 - size % 4096)));
  ReadFileRange(path_, static_cast<int64_t>(offset), out.get(), size, "test data");
  EXPECT_EQ(std::string(out.get(), size), Expected(offset, size));
  if (!evicted) GTEST_SKIP() << "the file system keeps this file in memory (no direct I/O)";
  EXPECT_LE(ResidentPages(offset, size), 4U);
}

// A file the page cache holds is read from there, whatever its alignment.
TEST_F(FileIoTest, CachedRangeIsReadExactly) {
  ASSERT_EQ(ReadFileBytes(path_, "test data"), bytes_);  // now in the page cache
  const size_t offset = 3;
  const size_t size = bytes_.size() - 5;
  std::string out(size, '\0');
  ReadFileRange(path_, static_cast<int64_t>(offset), out.data(), size, "test data");
  EXPECT_EQ(out, Expected(offset, size));
}

TEST_F(FileIoTest, SmallRangeIsReadExactly) {
  std::string out(100, '\0');
  ReadFileRange(path_, 4000, out.data(), out.size(), "test data");
  EXPECT_EQ(out, Expected(4000, 100));
}

// A range past the end of the file is an error naming the file and where it ends, on the
// direct path as on the cached one.
TEST_F(FileIoTest, RangePastTheEndNamesTheFileAndItsEnd) {
  for (const bool cold : {true, false}) {
    if (cold) Evict();
    const size_t offset = 4096;
    const size_t size = bytes_.size();  // 4096 bytes too many
    std::string out(size, '\0');
    const Error error = testing::ErrorOf(
        [&] { ReadFileRange(path_, static_cast<int64_t>(offset), out.data(), size, "test data"); });
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(error.what())
                  .find("test data: '" + path_ + "' ends at byte " + std::to_string(bytes_.size())),
              std::string::npos)
        << error.what();
    // What could be read was read.
    EXPECT_EQ(out.substr(0, bytes_.size() - offset), Expected(offset, bytes_.size() - offset));
  }
}

TEST_F(FileIoTest, MissingFileIsNotFound) {
  std::string out(10, '\0');
  const Error error = testing::ErrorOf(
      [&] { ReadFileRange(path_ + ".missing", 0, out.data(), out.size(), "test data"); });
  EXPECT_EQ(error.code(), ErrorCode::kNotFound);
  EXPECT_NE(std::string(error.what()).find(path_ + ".missing"), std::string::npos);
}

}  // namespace
}  // namespace autodist
