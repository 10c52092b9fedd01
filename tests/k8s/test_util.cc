#include "tests/k8s/test_util.h"

#include <cpprest/http_client.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/k8s/watch_queue.h"
#include "tests/k8s/yaml_json.h"

namespace autodist::k8s::testing {

Reply Call(ApiServer& api, const std::string& method, const std::string& path_and_query,
           const nlohmann::json& body, const std::string& content_type, const std::string& accept) {
  HttpRequest request;
  request.method = method;
  const size_t q = path_and_query.find('?');
  request.path = path_and_query.substr(0, q);
  request.raw_query = q == std::string::npos ? "" : path_and_query.substr(q + 1);
  if (!body.is_null()) request.body = body.is_string() ? body.get<std::string>() : body.dump();
  request.headers["content-type"] = content_type;
  if (!accept.empty()) request.headers["accept"] = accept;
  HttpResponse response = api.Handle(request);
  EXPECT_FALSE(response.stream) << "use StartWatch for " << path_and_query;
  Reply reply;
  reply.status = response.status;
  reply.raw = response.body;
  reply.headers = response.headers;
  reply.body = nlohmann::json::parse(response.body, nullptr, false);
  return reply;
}

nlohmann::json FixtureCrd() {
  auto docs = ParseYamlDocuments(ReadFile(AUTODIST_K8S_FIXTURES_DIR "/autodistjobs-crd.yaml"));
  return docs.at(0);
}

nlohmann::json Job(const std::string& name) {
  return {{"apiVersion", "autodist.io/v1alpha1"},
          {"kind", "AutoDistJob"},
          {"metadata", {{"name", name}, {"labels", {{"app", "fmnist"}}}}},
          {"spec",
           {{"model", {{"path", "fmnist_mlp.onnx"}}},
            {"data", {{"format", "fashion-mnist"}, {"batchSizePerReplica", 32}}},
            {"training", {{"epochs", 1}}},
            {"strategy", {{"builder", "PSLoadBalancing"}}},
            {"resources", {{"workers", 2}, {"parameterServers", 1}}}}}};
}

void RegisterCrd(ApiServer& api) {
  const Reply r =
      Call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", FixtureCrd());
  ASSERT_EQ(r.status, 201) << r.raw;
}

void MemorySink::Write(const std::string& data) {
  std::lock_guard lock(mutex_);
  AppendEventLines(data, buffer_, events_);
  cv_.notify_all();
}

void MemorySink::Close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  cv_.notify_all();
}

std::vector<nlohmann::json> MemorySink::WaitForEvents(size_t n, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return events_.size() >= n; });
  return events_;
}

bool MemorySink::WaitClosed(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return closed_; });
}

std::vector<nlohmann::json> MemorySink::Events() {
  std::lock_guard lock(mutex_);
  return events_;
}

std::shared_ptr<Watcher> StartWatch(ApiServer& api, const std::string& path_and_query,
                                    std::shared_ptr<MemorySink> sink, const std::string& accept) {
  HttpRequest request;
  request.method = "GET";
  const size_t q = path_and_query.find('?');
  request.path = path_and_query.substr(0, q);
  request.raw_query = q == std::string::npos ? "" : path_and_query.substr(q + 1);
  if (!accept.empty()) request.headers["accept"] = accept;
  HttpResponse response = api.Handle(request);
  EXPECT_TRUE(response.stream) << response.status << " " << response.body;
  if (!response.stream) return nullptr;
  return response.stream(std::move(sink));
}

Reply HttpCall(const std::string& base_url, const std::string& method,
               const std::string& path_and_query, const std::string& body,
               const std::string& content_type) {
  web::http::client::http_client client(base_url);
  web::http::http_request request(method);
  request.set_request_uri(path_and_query);
  if (!body.empty()) request.set_body(body, content_type);
  const web::http::http_response response = client.request(request).get();
  Reply reply;
  reply.status = response.status_code();
  for (const auto& [name, value] : response.headers()) reply.headers.emplace_back(name, value);
  reply.raw = response.extract_utf8string(true).get();
  reply.body = nlohmann::json::parse(reply.raw, nullptr, false);
  return reply;
}

namespace {

[[noreturn]] void ExecChild(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env) {
  for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

int DecodeStatus(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }

}  // namespace

CommandResult Run(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env,
                  std::chrono::milliseconds timeout) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    ExecChild(argv, env);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !killed) {
      kill(pid, SIGKILL);
      killed = true;
    }
    if (poll(fds, 2, killed ? 1000 : static_cast<int>(std::min<long>(left.count(), 1000))) < 0) {
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = DecodeStatus(status);
  return result;
}

Background::Background(const std::vector<std::string>& argv,
                       const std::map<std::string, std::string>& env, const std::string& out_file,
                       const std::string& err_file) {
  pid_ = fork();
  if (pid_ == 0) {
    const int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    ExecChild(argv, env);
  }
}

Background::~Background() { Stop(); }

int Background::Stop() {
  if (status_) return *status_;
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      status_ = DecodeStatus(status);
      return *status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  status_ = DecodeStatus(status);
  return *status_;
}

std::optional<int> Background::Wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      status_ = DecodeStatus(status);
      return status_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "k8s-double-XXXXXX").string();
  path_ = mkdtemp(pattern.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
}

bool MakeSelfSignedCertificate(const std::string& dir, const std::string& name) {
  return Run({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
              "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", dir + "/" + name + ".key",
              "-out", dir + "/" + name + ".crt", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
              "subjectAltName=IP:127.0.0.1"})
             .exit_code == 0;
}

}  // namespace autodist::k8s::testing
