// The emulated network itself: hosts reach each other and the caller, a shaped link is no faster
// than its rate, destroying the network leaves nothing, bad input is refused. Skipped, visibly,
// where this process cannot create network namespaces.
#include "launcher/netemu/emulated_network.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include "runtime/common/error.h"
#include "tests/error_of.h"
#include "tests/netemu/netemu_test_util.h"

namespace autodist::netemu {
namespace {

using autodist::testing::ErrorOf;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// A socket bound to address:0 and listening, and its port.
std::pair<int, int> Listen(const std::string& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  inet_pton(AF_INET, address.c_str(), &where.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0 || ::listen(fd, 4) != 0) {
    ::close(fd);
    return {-1, 0};
  }
  socklen_t length = sizeof where;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&where), &length);
  return {fd, ntohs(where.sin_port)};
}

int Connect(const std::string& address, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in where{};
  where.sin_family = AF_INET;
  where.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, address.c_str(), &where.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Runs `work` on a thread that first joins `ns` (nullptr: stays in ours) and returns its result.
template <typename Work>
auto InNamespace(const NetworkNamespace* ns, Work work) {
  return std::async(std::launch::async, [ns, work]() {
    if (ns != nullptr && ::setns(ns->fd(), CLONE_NEWNET) != 0) {
      throw std::runtime_error("setns failed");
    }
    return work();
  });
}

// Serves one connection on `listener`: reads until the peer shuts down, answers with the byte
// count (8 bytes), closes. Returns the count.
int64_t CountAndAnswer(int listener) {
  const int connection = ::accept(listener, nullptr, nullptr);
  int64_t received = 0;
  std::vector<char> buffer(size_t{1} << 16);
  while (true) {
    const ssize_t n = ::read(connection, buffer.data(), buffer.size());
    if (n <= 0) break;
    received += n;
  }
  [[maybe_unused]] const ssize_t sent = ::write(connection, &received, sizeof received);
  ::close(connection);
  return received;
}

// Sends `bytes` to address:port and returns what the server says it received.
int64_t SendAndHear(const std::string& address, int port, int64_t bytes) {
  const int fd = Connect(address, port);
  if (fd < 0) return -1;
  std::vector<char> chunk(size_t{1} << 16, 'x');
  for (int64_t left = bytes; left > 0;) {
    const ssize_t n = ::write(fd, chunk.data(), std::min<int64_t>(left, chunk.size()));
    if (n <= 0) break;
    left -= n;
  }
  ::shutdown(fd, SHUT_WR);
  int64_t heard = -1;
  if (::read(fd, &heard, sizeof heard) != sizeof heard) heard = -1;
  ::close(fd);
  return heard;
}

struct Transfer {
  int64_t heard = -1;   // what the sender heard back
  int64_t served = -1;  // what the server counted
  double seconds = 0;   // from the connect to the answer
};

// Sends `bytes` from namespace `from` (nullptr: ours) to a server on host `to`.
Transfer Send(const NetworkNamespace* from, const EmulatedHost& to, int64_t bytes) {
  Transfer transfer;
  const auto [listener, port] = InNamespace(to.ns, [&] { return Listen(to.address); }).get();
  if (listener < 0) return transfer;
  auto served = InNamespace(to.ns, [listener = listener] { return CountAndAnswer(listener); });
  const auto start = Clock::now();
  transfer.heard =
      InNamespace(from, [&, port = port] { return SendAndHear(to.address, port, bytes); }).get();
  transfer.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  transfer.served = served.get();
  ::close(listener);
  return transfer;
}

TEST(EmulatedNetworkTest, HostsReachEachOtherAndTheCaller) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  const EmulatedNetwork network(
      NetworkOptions{{"worker-0", "worker-1"}, 1'000'000'000, std::nullopt, true});
  ASSERT_EQ(network.hosts().size(), 2U);
  const EmulatedHost& server = network.Host("worker-0");
  const EmulatedHost& client = network.Host("worker-1");
  EXPECT_NE(server.address, client.address);
  EXPECT_THAT(server.address, ::testing::StartsWith("198.18."));
  EXPECT_THAT(network.Describe(), AllOf(HasSubstr("2 hosts"), HasSubstr("1 Gbit/s")));

  // Host to host, then the caller (this namespace) to a host.
  for (const NetworkNamespace* from : {client.ns, static_cast<const NetworkNamespace*>(nullptr)}) {
    const Transfer transfer = Send(from, server, 100'000);
    EXPECT_EQ(transfer.heard, 100'000);
    EXPECT_EQ(transfer.served, 100'000);
  }
  // The hosts are not on this namespace's loopback: a server there is out of a host's reach.
  auto local = Listen("127.0.0.1");
  ASSERT_GE(local.first, 0);
  EXPECT_EQ(InNamespace(client.ns, [&] { return Connect("127.0.0.1", local.second); }).get(), -1);
  ::close(local.first);
}

// A lower bound on the time only: a loaded machine makes transfers slower, never faster, so this
// cannot fail for noise.
TEST(EmulatedNetworkTest, AShapedLinkIsNoFasterThanItsRate) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  constexpr int64_t kBits = 100'000'000;
  constexpr int64_t kBytes = 2'500'000;  // 0.2 s at 100 Mbit/s
  const EmulatedNetwork network(NetworkOptions{{"a", "b"}, kBits, std::nullopt, false});
  const Transfer transfer = Send(network.Host("b").ns, network.Host("a"), kBytes);
  EXPECT_EQ(transfer.heard, kBytes);
  EXPECT_EQ(transfer.served, kBytes);
  const double seconds = transfer.seconds;
  const double at_rate = static_cast<double>(kBytes) * 8 / kBits;
  EXPECT_GE(seconds, 0.9 * at_rate) << "2.5 MB crossed a 100 Mbit/s link in " << seconds << " s";
}

TEST(EmulatedNetworkTest, DestroyingTheNetworkLeavesNothingBehind) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  std::set<std::string> namespaces;
  std::vector<pid_t> holders;
  std::string device;
  {
    const EmulatedNetwork network(
        NetworkOptions{{"x", "y", "z"}, 1'000'000'000, std::nullopt, true});
    for (const EmulatedHost& host : network.hosts()) {
      namespaces.insert(NetNamespaceOf(host.ns->holder()));
      holders.push_back(host.ns->holder());
    }
    const std::string& caller = network.caller_address();
    device = "adn" + caller.substr(7, caller.rfind('.') - 7);  // 198.18.<N>.1 -> adn<N>
    ASSERT_NE(if_nametoindex(device.c_str()), 0U) << device;
    EXPECT_EQ(namespaces.size(), 3U);
    EXPECT_FALSE(namespaces.contains(NetNamespaceOf(::getpid())));
  }
  // The caller's end goes with the destructor, not some time later.
  EXPECT_EQ(if_nametoindex(device.c_str()), 0U) << device;
  for (const pid_t holder : holders) EXPECT_EQ(NetNamespaceOf(holder), "") << holder;
  EXPECT_THAT(LeftBehind(namespaces, device), ::testing::IsEmpty());
}

TEST(EmulatedNetworkTest, RefusesBadHostsAndLatencies) {
  EXPECT_THAT(ErrorOf([] { EmulatedNetwork network(NetworkOptions{}); }).what(),
              HasSubstr("needs hosts"));
  EXPECT_THAT(ErrorOf([] {
                EmulatedNetwork network(NetworkOptions{{"a", "b", "a"}});
              }).what(),
              HasSubstr("host 'a' is named twice"));
  NetworkOptions many;
  for (int i = 0; i < 251; ++i) many.hosts.push_back(std::to_string(i));
  EXPECT_THAT(ErrorOf([&] { EmulatedNetwork network(many); }).what(),
              HasSubstr("at most 250 hosts"));
  NetworkOptions negative{{"a"}};
  negative.latency_ms = -1;
  EXPECT_THAT(ErrorOf([&] { EmulatedNetwork network(negative); }).what(),
              HasSubstr("latency -1 ms"));
}

// This kernel's answer decides the branch; the log says which one ran.
TEST(EmulatedNetworkTest, ALatencyNeedsNetemAndSaysSo) {
  AUTODIST_SKIP_WITHOUT_NETWORK_EMULATION();
  NetworkOptions options{{"a", "b"}};
  options.latency_ms = 20;
  std::string why;
  if (!NetemAvailable(&why)) {
    std::cout << "netem is absent on this kernel: " << why << std::endl;
    const Error error = ErrorOf([&] { EmulatedNetwork network(options); });
    EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
    EXPECT_THAT(error.what(), AllOf(HasSubstr("netem"), HasSubstr("leave the latency out")));
    return;
  }
  std::cout << "netem is present on this kernel" << std::endl;
  const EmulatedNetwork network(options);
  // Connect (one round trip), then data and answer (another): at least 2 x 2 x 20 ms.
  const Transfer transfer = Send(network.Host("b").ns, network.Host("a"), 10);
  EXPECT_EQ(transfer.heard, 10);
  EXPECT_GE(transfer.seconds, 0.08);
}

}  // namespace
}  // namespace autodist::netemu
