// The double over real HTTP (cpprestsdk listener): streaming watches on the wire, the control
// endpoint (fault injection, latency, stats, closing watches, compaction) and throughput.
#include <arpa/inet.h>
#include <cpprest/http_client.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "tests/k8s/http_server.h"
#include "tests/k8s/test_util.h"

namespace autodist::k8s {
namespace {

using testing::HttpCall;

const char* const kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string ConfigMap(const std::string& name) {
  return nlohmann::json{{"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}}.dump();
}

// A raw HTTP/1.1 client for watches: reads the chunked stream as it arrives.
class RawWatch {
 public:
  RawWatch(int port, const std::string& path_and_query) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    const std::string request = "GET " + path_and_query +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n";
    EXPECT_EQ(::send(fd_, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  }
  ~RawWatch() { Close(); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Reads until `needle` appears in the received bytes or the timeout passes.
  bool WaitFor(const std::string& needle,
               std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return received_.find(needle) != std::string::npos;
      received_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  std::string received_;
};

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ApiServerOptions options;
    options.bookmark_interval = std::chrono::milliseconds(200);
    api_ = std::make_unique<ApiServer>(options);
    server_ = std::make_unique<HttpServer>(*api_, "127.0.0.1", 0);
    url_ = server_->url();
  }
  void TearDown() override {
    server_.reset();
    api_.reset();
  }
  testing::Reply Faults(const nlohmann::json& body) {
    return HttpCall(url_, "POST", "/_testdouble/faults", body.dump());
  }

  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> server_;
  std::string url_;
};

TEST_F(HttpTest, CrudOverHttp) {
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(HttpCall(url_, "POST", kConfigMaps, ConfigMap("a")).status, 201);
  const auto got = HttpCall(url_, "GET", std::string(kConfigMaps) + "/a");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body["data"]["k"], "v");
  EXPECT_EQ(HttpCall(url_, "GET", "/version").body["major"], "1");
  EXPECT_EQ(HttpCall(url_, "GET", "/nope").status, 404);
}

TEST_F(HttpTest, WatchStreamsChunkedEventsAsTheyHappen) {
  RawWatch watch(server_->port(), std::string(kConfigMaps) + "?watch=true");
  ASSERT_TRUE(watch.WaitFor("Transfer-Encoding: chunked")) << watch.received();
  HttpCall(url_, "POST", kConfigMaps, ConfigMap("first"));
  EXPECT_TRUE(watch.WaitFor("\"first\"")) << watch.received();
  HttpCall(url_, "POST", kConfigMaps, ConfigMap("second"));
  EXPECT_TRUE(watch.WaitFor("\"second\"")) << watch.received();
  EXPECT_NE(watch.received().find("{\"type\":\"ADDED\",\"object\":{"), std::string::npos);
  // closeWatches ends the response with the last chunk.
  EXPECT_EQ(Faults({{"closeWatches", true}}).status, 200);
  EXPECT_TRUE(watch.WaitFor("\r\n0\r\n\r\n")) << watch.received();
}

TEST_F(HttpTest, CompactionMakesOldResourceVersionsGone) {
  const auto a = HttpCall(url_, "POST", kConfigMaps, ConfigMap("a"));
  HttpCall(url_, "POST", kConfigMaps, ConfigMap("b"));
  Faults({{"compactHistory", true}});
  RawWatch watch(server_->port(), std::string(kConfigMaps) + "?watch=true&resourceVersion=" +
                                      a.body["metadata"]["resourceVersion"].get<std::string>());
  EXPECT_TRUE(watch.WaitFor("\"code\":410")) << watch.received();
  EXPECT_NE(watch.received().find("\"type\":\"ERROR\""), std::string::npos);
}

TEST_F(HttpTest, BookmarksArriveOnTheWire) {
  RawWatch watch(server_->port(),
                 std::string(kConfigMaps) + "?watch=true&allowWatchBookmarks=true");
  EXPECT_TRUE(watch.WaitFor("\"type\":\"BOOKMARK\"")) << watch.received();
}

TEST_F(HttpTest, InjectedFailures) {
  ASSERT_EQ(
      Faults({{"failures",
               {{{"verb", "create"}, {"resource", "configmaps"}, {"count", 2}, {"code", 500}}}}})
          .status,
      200);
  const auto first = HttpCall(url_, "POST", kConfigMaps, ConfigMap("a"));
  EXPECT_EQ(first.status, 500);
  EXPECT_EQ(first.body["reason"], "InternalError");
  EXPECT_EQ(HttpCall(url_, "POST", kConfigMaps, ConfigMap("a")).status, 500);
  EXPECT_EQ(HttpCall(url_, "POST", kConfigMaps, ConfigMap("a")).status, 201);
  EXPECT_EQ(HttpCall(url_, "GET", std::string(kConfigMaps) + "/a").status, 200);  // other verbs

  Faults(
      {{"failures",
        {{{"verb", "*"}, {"resource", "configmaps"}, {"code", 429}, {"retryAfterSeconds", 3}}}}});
  const auto throttled = HttpCall(url_, "GET", std::string(kConfigMaps) + "/a");
  EXPECT_EQ(throttled.status, 429);
  EXPECT_EQ(throttled.body["reason"], "TooManyRequests");
  EXPECT_EQ(throttled.body["details"]["retryAfterSeconds"], 3);
  bool retry_after = false;
  for (const auto& [name, value] : throttled.headers)
    retry_after |= name == "Retry-After" && value == "3";
  EXPECT_TRUE(retry_after);
  EXPECT_EQ(HttpCall(url_, "GET", std::string(kConfigMaps) + "/a").status, 200);

  // Status subresources are matched as resource/status.
  HttpCall(url_, "POST", "/api/v1/namespaces/default/pods",
           nlohmann::json{{"metadata", {{"name", "p"}}},
                          {"spec", {{"containers", nlohmann::json::array()}}}}
               .dump());
  Faults({{"failures", {{{"verb", "patch"}, {"resource", "pods/status"}, {"code", 503}}}}});
  EXPECT_EQ(HttpCall(url_, "PATCH", "/api/v1/namespaces/default/pods/p", "{}",
                     "application/merge-patch+json")
                .status,
            200);
  EXPECT_EQ(HttpCall(url_, "PATCH", "/api/v1/namespaces/default/pods/p/status", "{}",
                     "application/merge-patch+json")
                .status,
            503);
  EXPECT_EQ(HttpCall(url_, "GET", "/_testdouble/faults").body["failures"].size(), 0u);

  // Other codes carry the reason the real server gives them, so clients classify them alike.
  Faults({{"failures", {{{"verb", "update"}, {"resource", "configmaps"}, {"code", 409}}}}});
  const auto conflict = HttpCall(url_, "PUT", std::string(kConfigMaps) + "/a", ConfigMap("a"));
  EXPECT_EQ(conflict.status, 409);
  EXPECT_EQ(conflict.body["reason"], "Conflict");
}

TEST_F(HttpTest, InjectedLatencyAndStats) {
  HttpCall(url_, "DELETE", "/_testdouble/stats");
  Faults({{"latency", {{"milliseconds", 300}, {"verb", "list"}}}});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(HttpCall(url_, "GET", kConfigMaps).status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(290));
  const auto quick_start = std::chrono::steady_clock::now();
  HttpCall(url_, "POST", kConfigMaps, ConfigMap("a"));
  EXPECT_LT(std::chrono::steady_clock::now() - quick_start, std::chrono::milliseconds(250));
  HttpCall(url_, "DELETE", "/_testdouble/faults");

  const auto stats = HttpCall(url_, "GET", "/_testdouble/stats").body;
  EXPECT_EQ(stats["requests"]["list"]["configmaps"], 1);
  EXPECT_EQ(stats["requests"]["create"]["configmaps"], 1);
  EXPECT_EQ(stats["total"], 2);
  EXPECT_TRUE(stats.contains("openWatches"));
  EXPECT_TRUE(stats.contains("resourceVersion"));
}

TEST_F(HttpTest, WatchOfAVanishedClientIsDropped) {
  {
    RawWatch watch(server_->port(), std::string(kConfigMaps) + "?watch=true");
    ASSERT_TRUE(watch.WaitFor("chunked"));
  }
  EXPECT_EQ(api_->store().open_watches(), 1u);
  // The listener notices the closed connection when it next writes to it.
  for (int i = 0; i < 50 && api_->store().open_watches() > 0; ++i) {
    HttpCall(url_, "POST", kConfigMaps, ConfigMap("cm-" + std::to_string(i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(api_->store().open_watches(), 0u);
}

TEST_F(HttpTest, ThroughputOfConcurrentClients) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 250;
  std::atomic<int> failures{0};
  RawWatch watch(server_->port(), "/api/v1/pods?watch=true");
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      web::http::client::http_client client(url_);
      for (int i = 0; i < kPerThread; ++i) {
        web::http::http_request request(web::http::methods::POST);
        request.set_request_uri("/api/v1/namespaces/default/pods");
        request.set_body(
            nlohmann::json{{"metadata",
                            {{"name", "p-" + std::to_string(t) + "-" + std::to_string(i)},
                             {"labels", {{"job", "j" + std::to_string(i % 10)}}}}},
                           {"spec", {{"containers", {{{"name", "c"}, {"image", "i"}}}}}}}
                .dump(),
            "application/json");
        if (client.request(request).get().status_code() != 201) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double rate = kThreads * kPerThread / seconds;
  RecordProperty("creates_per_second", std::to_string(static_cast<int>(rate)));
  std::printf("%d creates from %d clients in %.2f s: %.0f/s\n", kThreads * kPerThread, kThreads,
              seconds, rate);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(rate, 200.0);
  EXPECT_TRUE(watch.WaitFor("p-7-249"));

  const auto list_start = std::chrono::steady_clock::now();
  const auto list = HttpCall(url_, "GET", "/api/v1/pods?labelSelector=job%3Dj3");
  EXPECT_EQ(list.body["items"].size(), static_cast<size_t>(kThreads * kPerThread / 10));
  EXPECT_LT(std::chrono::steady_clock::now() - list_start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace autodist::k8s
