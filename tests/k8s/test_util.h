// Helpers for the test double's tests: in-process calls, a watch sink that records events, an
// HTTP client, subprocesses (fake-apiserver, kubectl) and temporary directories. Other modules'
// tests want TestApiServer (test_api_server.h, included here).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/k8s/api_server.h"
#include "tests/k8s/test_api_server.h"

namespace autodist::k8s::testing {

struct Reply {
  int status = 0;
  nlohmann::json body;
  std::string raw;
  std::vector<std::pair<std::string, std::string>> headers;
};

// One request to an in-process ApiServer. `body` may be JSON or a string sent verbatim.
Reply Call(ApiServer& api, const std::string& method, const std::string& path_and_query,
           const nlohmann::json& body = nullptr,
           const std::string& content_type = "application/json", const std::string& accept = "");

// The fixture CRD (tests/k8s/fixtures/autodistjobs-crd.yaml) and an AutoDistJob for it.
nlohmann::json FixtureCrd();
nlohmann::json Job(const std::string& name);
// Registers the fixture CRD; fails the test when that does not answer 201.
void RegisterCrd(ApiServer& api);

// Records the lines a watch writes.
class MemorySink : public WatchSink {
 public:
  void Write(const std::string& data) override;
  void Close() override;
  size_t Backlog() const override { return 0; }

  // Waits until `n` events arrived (or the timeout); returns all events so far.
  std::vector<nlohmann::json> WaitForEvents(
      size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  std::vector<nlohmann::json> Events();

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::string buffer_;
  std::vector<nlohmann::json> events_;
  bool closed_ = false;
};

// Starts a watch through Handle(); the response must be a stream.
std::shared_ptr<Watcher> StartWatch(ApiServer& api, const std::string& path_and_query,
                                    std::shared_ptr<MemorySink> sink,
                                    const std::string& accept = "");

// HTTP/1.1 request to `base_url` (http://127.0.0.1:PORT) with cpprestsdk's client.
Reply HttpCall(const std::string& base_url, const std::string& method,
               const std::string& path_and_query, const std::string& body = "",
               const std::string& content_type = "application/json");

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv (PATH lookup) with extra environment, capturing output; kills it after `timeout`.
CommandResult Run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env = {},
                  std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A process in the background whose stdout/stderr go to files.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& out_file, const std::string& err_file);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  // SIGTERM, then SIGKILL after a grace period; returns the exit status (or -signal).
  int Stop();
  // Waits for the process to exit by itself; nullopt when it is still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A self-signed certificate for 127.0.0.1 (its own CA) in `dir`/`name`.{crt,key}, made with the
// openssl CLI; false where there is none.
bool MakeSelfSignedCertificate(const std::string& dir, const std::string& name);

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& content);

}  // namespace autodist::k8s::testing
