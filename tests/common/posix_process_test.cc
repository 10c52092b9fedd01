#include "runtime/common/posix_process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace autodist {
namespace {

TEST(PosixProcessTest, APipeCarriesWhatAChildWritesAndItsExitStatusIsReaped) {
  Pipe pipe = MakePipe("test");
  ASSERT_GE(pipe.read, 0);
  ASSERT_GE(pipe.write, 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string text(10000, 'x');  // more than one read's buffer
    if (::write(pipe.write, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      _exit(1);
    }
    _exit(3);
  }
  CloseIfOpen(pipe.write);
  EXPECT_EQ(pipe.write, -1);
  EXPECT_EQ(ReadToEnd(pipe.read), std::string(10000, 'x'));
  CloseIfOpen(pipe.read);
  int status = 0;
  WaitForPid(pid, &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  CloseIfOpen(pipe.read);  // a second close of a closed end does nothing
  EXPECT_EQ(pipe.read, -1);
}

TEST(PosixProcessTest, BothEndsAreClosedOnExec) {
  const Pipe pipe = MakePipe("test");
  EXPECT_NE(::fcntl(pipe.read, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_NE(::fcntl(pipe.write, F_GETFD) & FD_CLOEXEC, 0);
  ::close(pipe.read);
  ::close(pipe.write);
}

}  // namespace
}  // namespace autodist
