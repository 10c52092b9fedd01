// The Gloo communicator's own links (runtime/collective/gloo/peer_links.h): ranks as threads of
// this process, rendezvous through gloo's HashStore.
#include "runtime/collective/gloo/peer_links.h"

#include <arpa/inet.h>
#include <gloo/rendezvous/hash_store.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace autodist::collective::gloo_detail {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

LinkOptions Options(std::chrono::milliseconds timeout,
                    std::chrono::microseconds spin = std::chrono::microseconds(0)) {
  LinkOptions options;
  options.timeout = timeout;
  options.spin = spin;
  options.congestion_control = {"cubic", "reno"};
  return options;
}

struct Outcome {
  std::optional<std::string> error;
  bool timed_out = false;
};

// Connects `size` ranks (one thread each) and runs `body(links)` on each; returns what each threw.
std::vector<Outcome> RunLinks(int size, const std::function<void(PeerLinks&)>& body,
                              std::chrono::milliseconds timeout = 10s) {
  gloo::rendezvous::HashStore store;
  std::vector<Outcome> outcomes(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        PeerLinks links(store, rank, size, "127.0.0.1", Options(timeout, 50us));
        body(links);
      } catch (const LinkError& error) {
        outcomes[static_cast<size_t>(rank)] = {error.what(), error.timed_out()};
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return outcomes;
}

// Waits for 8 bytes from rank 0.
void ReceiveFromRank0(PeerLinks& links) {
  std::vector<std::byte> into(8);
  links.Exchange(-1, {}, 0, into);
}

std::vector<std::byte> Pattern(size_t size, int seed) {
  std::vector<std::byte> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return bytes;
}

// Both ranks send 16 MiB to each other at once: with blocking writes each would wait for the
// other to read; here both finish, and every byte arrives.
TEST(PeerLinksTest, TwoRanksSendLargeMessagesToEachOtherAtOnce) {
  constexpr size_t kBytes = size_t{16} << 20;
  const auto outcomes = RunLinks(2, [](PeerLinks& links) {
    const int peer = 1 - links.rank();
    const std::vector<std::byte> mine = Pattern(kBytes, links.rank());
    std::vector<std::byte> theirs(kBytes);
    links.Exchange(peer, mine, peer, theirs);
    EXPECT_EQ(theirs, Pattern(kBytes, peer)) << "rank " << links.rank();
  });
  for (const Outcome& outcome : outcomes) EXPECT_FALSE(outcome.error) << *outcome.error;
}

TEST(PeerLinksTest, SendsAndReceivesAroundARingAndOneWayOnly) {
  const auto outcomes = RunLinks(4, [](PeerLinks& links) {
    const int right = (links.rank() + 1) % 4;
    const int left = (links.rank() + 3) % 4;
    for (int round = 0; round < 3; ++round) {
      const std::vector<std::byte> mine = Pattern(1000 + round, links.rank() + round);
      std::vector<std::byte> from_left(1000 + round);
      links.Exchange(right, mine, left, from_left);
      EXPECT_EQ(from_left, Pattern(1000 + round, left + round));
    }
    // One way: rank 0 sends to 1, which only receives; empty messages count as messages too.
    if (links.rank() == 0) links.Exchange(1, Pattern(10, 7), -1, {});
    if (links.rank() == 1) {
      std::vector<std::byte> got(10);
      links.Exchange(-1, {}, 0, got);
      EXPECT_EQ(got, Pattern(10, 7));
    }
    if (links.rank() == 2) links.Exchange(3, {}, -1, {});
    if (links.rank() == 3) links.Exchange(-1, {}, 2, {});
  });
  for (const Outcome& outcome : outcomes) EXPECT_FALSE(outcome.error) << *outcome.error;
}

// Every rank sends 4 MiB to each of the three others and receives theirs, all at once.
TEST(PeerLinksTest, ExchangeAllMovesEverySendAndReceiveAtOnce) {
  static constexpr size_t kBytes = size_t{4} << 20;
  const auto outcomes = RunLinks(4, [](PeerLinks& links) {
    const int me = links.rank();
    std::vector<std::vector<std::byte>> mine;
    std::vector<std::vector<std::byte>> theirs;
    std::vector<PeerLinks::Send> sends;
    std::vector<PeerLinks::Receive> receives;
    for (int peer = 0; peer < 4; ++peer) {
      if (peer == me) continue;
      mine.push_back(Pattern(kBytes, 10 * me + peer));
      theirs.emplace_back(kBytes);
    }
    for (int peer = 0, i = 0; peer < 4; ++peer) {
      if (peer == me) continue;
      sends.push_back({peer, mine[static_cast<size_t>(i)]});
      receives.push_back({peer, theirs[static_cast<size_t>(i)]});
      ++i;
    }
    links.ExchangeAll(sends, receives);
    for (int peer = 0, i = 0; peer < 4; ++peer) {
      if (peer == me) continue;
      EXPECT_EQ(theirs[static_cast<size_t>(i++)], Pattern(kBytes, 10 * peer + me))
          << "rank " << me << " from " << peer;
    }
    // Two sends to one peer in one exchange would leave their order to chance.
    try {
      const std::vector<std::byte> small(4);
      const int peer = (me + 1) % 4;
      const std::vector<PeerLinks::Send> twice{{peer, small}, {peer, small}};
      links.ExchangeAll(twice, {});
      ADD_FAILURE() << "two sends to one peer were taken";
    } catch (const LinkError& error) {
      EXPECT_THAT(error.what(), HasSubstr("two sends to one peer"));
    }
  });
  for (const Outcome& outcome : outcomes) EXPECT_FALSE(outcome.error) << *outcome.error;
}

TEST(PeerLinksTest, AMessageOfAnotherLengthIsAnErrorNamingBothLengths) {
  const auto outcomes = RunLinks(2, [](PeerLinks& links) {
    if (links.rank() == 0) {
      links.Exchange(1, Pattern(100, 0), -1, {});
    } else {
      std::vector<std::byte> into(64);
      links.Exchange(-1, {}, 0, into);
    }
  });
  EXPECT_FALSE(outcomes[0].error);
  ASSERT_TRUE(outcomes[1].error);
  EXPECT_THAT(*outcomes[1].error, HasSubstr("link to rank 0"));
  EXPECT_THAT(*outcomes[1].error,
              HasSubstr("expected message 0 of 64 bytes, got message 0 of 100"));
  EXPECT_FALSE(outcomes[1].timed_out);
}

TEST(PeerLinksTest, APeerThatSendsNothingTimesOut) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = RunLinks(
      2,
      [](PeerLinks& links) {
        if (links.rank() == 1) {
          ReceiveFromRank0(links);
        } else {
          std::this_thread::sleep_for(1500ms);  // alive, silent, past rank 1's timeout
        }
      },
      500ms);
  ASSERT_TRUE(outcomes[1].error);
  EXPECT_TRUE(outcomes[1].timed_out);
  EXPECT_THAT(*outcomes[1].error, HasSubstr("nothing moved for 0.5 s"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(PeerLinksTest, APeerThatGoesAwayFailsTheOtherAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = RunLinks(
      2,
      [](PeerLinks& links) {
        if (links.rank() == 1) ReceiveFromRank0(links);
        // rank 0 returns: its links close
      },
      30s);
  ASSERT_TRUE(outcomes[1].error);
  EXPECT_FALSE(outcomes[1].timed_out);
  EXPECT_THAT(*outcomes[1].error, HasSubstr("closed by the peer"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

TEST(PeerLinksTest, ShutdownWakesAPeerWaitingOnTheLink) {
  const auto outcomes = RunLinks(
      2,
      [](PeerLinks& links) {
        if (links.rank() == 0) {
          std::this_thread::sleep_for(100ms);
          links.Shutdown();
          std::vector<std::byte> into(8);
          links.Exchange(-1, {}, 1, into);  // after a shutdown: fails, never waits
        } else {
          ReceiveFromRank0(links);
        }
      },
      30s);
  ASSERT_TRUE(outcomes[0].error);
  ASSERT_TRUE(outcomes[1].error);
  EXPECT_FALSE(outcomes[1].timed_out);
}

TEST(PeerLinksTest, TheRendezvousTimesOutWhenARankNeverConnects) {
  gloo::rendezvous::HashStore store;
  // Rank 0 of 2 waits for rank 1, which never comes.
  try {
    PeerLinks links(store, 0, 2, "127.0.0.1", Options(300ms));
    FAIL() << "connected without rank 1";
  } catch (const LinkError& error) {
    EXPECT_THAT(error.what(), HasSubstr("waiting for ranks 1 to 1 to connect: timed out"));
  }
}

// A process that reaches the port but does not know the token the rank published through the
// job's store is dropped, and the ranks still connect.
TEST(PeerLinksTest, AConnectionWithoutTheTokenIsNotARank) {
  gloo::rendezvous::HashStore store;
  std::optional<std::string> error;
  std::thread rank0([&] {
    try {
      PeerLinks links(store, 0, 2, "127.0.0.1", Options(10s));
      std::vector<std::byte> into(4);
      links.Exchange(1, Pattern(4, 0), 1, into);
      EXPECT_EQ(into, Pattern(4, 1));
    } catch (const LinkError& e) {
      error = e.what();
    }
  });
  store.wait({"links/0"}, 10s);
  const std::vector<char> value = store.get("links/0");
  const std::string published(value.begin(), value.end());
  const int port = std::stoi(published.substr(published.find(' ') + 1));
  // The stranger claims to be rank 1, with a made-up token.
  const int stranger = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(stranger, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  const std::array<char, 20> hello{1,   0,   0,   0,   'n', 'o', 't', ' ', 't', 'h',
                                   'e', ' ', 't', 'o', 'k', 'e', 'n', '!', '!', '!'};
  ASSERT_EQ(::send(stranger, hello.data(), hello.size(), 0), 20);
  std::thread rank1([&] {
    PeerLinks links(store, 1, 2, "127.0.0.1", Options(10s));
    std::vector<std::byte> into(4);
    links.Exchange(0, Pattern(4, 1), 0, into);
    EXPECT_EQ(into, Pattern(4, 0));
  });
  rank0.join();
  rank1.join();
  ::close(stranger);
  EXPECT_FALSE(error) << *error;
}

// The first congestion control the kernel accepts wins; none given, the system's default stays.
TEST(PeerLinksTest, LinksTakeTheFirstCongestionControlTheKernelAllows) {
  gloo::rendezvous::HashStore store;
  std::vector<std::string> chosen(2);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      LinkOptions options = Options(10s);
      options.congestion_control = {"no-such-algorithm", "reno"};
      PeerLinks links(store, rank, 2, "127.0.0.1", options);
      chosen[static_cast<size_t>(rank)] = links.CongestionControl(1 - rank);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_EQ(chosen, (std::vector<std::string>{"reno", "reno"}));

  gloo::rendezvous::HashStore default_store;
  std::string system_default;
  std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control") >> system_default;
  std::vector<std::string> defaults(2);
  ranks.clear();
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      LinkOptions options = Options(10s);
      options.congestion_control.clear();
      PeerLinks links(default_store, rank, 2, "127.0.0.1", options);
      defaults[static_cast<size_t>(rank)] = links.CongestionControl(1 - rank);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_EQ(defaults, (std::vector<std::string>{system_default, system_default}));
}

size_t OpenDescriptors() {
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                           std::filesystem::directory_iterator()));
}

// Rank 1 of 3 never comes: rank 2 has connected to rank 0 when it gives up, and rank 0 has
// accepted it. Neither failed constructor may keep that connection open.
TEST(PeerLinksTest, AFailedRendezvousClosesTheLinksItMade) {
  const size_t before = OpenDescriptors();
  gloo::rendezvous::HashStore store;
  std::vector<std::optional<std::string>> errors(3);
  std::vector<std::thread> ranks;
  for (int rank : {0, 2}) {
    ranks.emplace_back([&, rank] {
      try {
        PeerLinks links(store, rank, 3, "127.0.0.1", Options(500ms));
      } catch (const std::exception& error) {
        errors[static_cast<size_t>(rank)] = error.what();
      }
    });
  }
  for (std::thread& rank : ranks) rank.join();
  EXPECT_TRUE(errors[0]) << "rank 0 connected without rank 1";
  EXPECT_TRUE(errors[2]) << "rank 2 connected without rank 1";
  EXPECT_EQ(OpenDescriptors(), before);
}

TEST(PeerLinksTest, AnUnknownHostnameIsNamed) {
  gloo::rendezvous::HashStore store;
  try {
    PeerLinks links(store, 0, 1, "no-such-host.invalid", Options(1s));
    FAIL() << "listened on an unknown host";
  } catch (const LinkError& error) {
    EXPECT_THAT(error.what(), HasSubstr("cannot resolve hostname 'no-such-host.invalid'"));
  }
}

}  // namespace
}  // namespace autodist::collective::gloo_detail
