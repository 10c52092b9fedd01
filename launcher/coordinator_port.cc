#include "launcher/coordinator_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include "runtime/common/error.h"

namespace autodist::launcher {
namespace {

constexpr int kLowestPort = 10000;  // above the ports services commonly listen on
constexpr int kDraws = 32;

// Binds 127.0.0.1:`port` (0: any) and returns the port bound, or 0 when it cannot.
int BindLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t length = sizeof(address);
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  return bound ? ntohs(address.sin_port) : 0;
}

}  // namespace

int EphemeralRangeStart(const std::string& range_file) {
  std::ifstream in(range_file);
  int first = 0;
  int last = 0;
  if (in >> first >> last && first > 0 && first <= last && last < 65536) return first;
  return 32768;
}

bool LoopbackPortFree(int port) { return port > 0 && BindLoopback(port) == port; }

int ChooseCoordinatorPort(int requested, int ephemeral_start) {
  if (requested != 0) {
    AD_CHECK(LoopbackPortFree(requested), kUnavailable,
             "coordinator port {} on 127.0.0.1 is in use; pick another with --port or leave it "
             "out to use a free one",
             requested);
    return requested;
  }
  if (ephemeral_start - kLowestPort >= kDraws) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> draw(kLowestPort, ephemeral_start - 1);
    for (int i = 0; i < kDraws; ++i) {
      const int port = draw(random);
      if (LoopbackPortFree(port)) return port;
    }
  }
  const int port = BindLoopback(0);
  AD_CHECK(port != 0, kUnavailable, "no free port on 127.0.0.1 for the coordinator");
  return port;
}

}  // namespace autodist::launcher
