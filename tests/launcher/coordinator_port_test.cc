// The coordinator port of a local run: drawn below the ephemeral range (where no outgoing
// connection can take it between the check and the chief's bind), free when chosen; a port
// asked for is used as it is, or refused by name when taken.
#include "launcher/coordinator_port.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "runtime/common/error.h"
#include "tests/launcher/launcher_test_util.h"

namespace autodist::launcher {
namespace {

using ::testing::HasSubstr;

// A socket listening on 127.0.0.1 on a port of the kernel's choosing, closed at the end.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~Listener() { ::close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(CoordinatorPortTest, DrawnFreeBelowTheEphemeralRange) {
  const int start = EphemeralRangeStart();
  for (int i = 0; i < 20; ++i) {
    const int port = ChooseCoordinatorPort(0, start);
    EXPECT_GE(port, 10000);
    EXPECT_LT(port, start);
    EXPECT_TRUE(LoopbackPortFree(port)) << port;
  }
  // With no room below the range, the kernel's choice.
  const int fallback = ChooseCoordinatorPort(0, 10010);
  EXPECT_GT(fallback, 0);
}

TEST(CoordinatorPortTest, AnAskedPortIsUsedOrRefusedByName) {
  const Listener taken;
  EXPECT_FALSE(LoopbackPortFree(taken.port()));
  try {
    ChooseCoordinatorPort(taken.port());
    ADD_FAILURE() << "a port in use was chosen";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(error.what(), HasSubstr("coordinator port " + std::to_string(taken.port()) +
                                        " on 127.0.0.1 is in use; pick another with --port"));
  }
  const int free = ChooseCoordinatorPort(0);
  EXPECT_EQ(ChooseCoordinatorPort(free), free);
}

TEST(CoordinatorPortTest, TheRangeIsReadFromTheKernelsFile) {
  TempDir dir;
  const std::string file = dir / "ip_local_port_range";
  std::ofstream(file) << "40000\t60999\n";
  EXPECT_EQ(EphemeralRangeStart(file), 40000);
  std::ofstream(file) << "garbage\n";
  EXPECT_EQ(EphemeralRangeStart(file), 32768);
  EXPECT_EQ(EphemeralRangeStart(dir / "missing"), 32768);
}

}  // namespace
}  // namespace autodist::launcher
