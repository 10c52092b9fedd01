// operator_scale_bench: the operator at scale against the API-server test double (issue 6 item
// 8, docs/performance.md "Operator at scale").
//
//   operator_scale_bench --jobs 1000 --rate 0 --operator-workers 8 [--json out.json]
//
// This process serves the test double (tests/k8s TestApiServer: the in-process API server over
// HTTP on a free 127.0.0.1 port) with the AutoDistJob CRD and NO node agent, so pods stay
// Pending: what is measured is the operator, not training. The operator runs as its own
// process (build/bin/autodist-operator, flags as the Helm chart passes them) so its peak RSS
// (VmHWM) and CPU time are its own; `--in-process` runs the JobController inside this process
// instead (for profiling; RSS is then the whole process's).
//
// N jobs (default 1,000) of W workers + P parameter servers (default 7 + 1 = 8 pods) are created
// over HTTP as `kubectl apply` would (POST), from `--clients` threads, either as fast as they can
// (`--rate 0`) or at a fixed rate (jobs/s). Per job it records, from an in-process watch on the
// double's store (timestamps taken when the store commits, no HTTP in between):
//   * create → first status write by the operator (queueing + parse + compile + status PUT),
//   * create → all of its pods exist (the latency the targets are about),
// and over the run: wall time, reconciles (the operator's autodist_operator_reconcile_total)
// per second, the mean reconcile duration, API requests per job (the double's counters), the
// operator's peak RSS, and CPU seconds of the operator and of this process (double + clients).
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

// After <utility>: the Boost.Asio it includes uses std::exchange without including it.
#include <pplx/threadpool.h>

#include "operator/app/job_controller.h"
#include "operator/app/log.h"
#include "operator/app/operator_options.h"
#include "operator/controller/operator_metrics.h"
#include "operator/kube/client.h"
#include "operator/kube/config.h"
#include "operator/kube/resource.h"
#include "runtime/observe/metrics.h"
#include "runtime/observe/operability_server.h"
#include "tests/k8s/test_api_server.h"
#include "tests/k8s/watch.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Options {
  int jobs = 1000;
  // cpprestsdk's pool in this process (the double's listener and the creating clients); its
  // default of 40 threads doubles the double's CPU per job in context switches.
  int server_threads = 2;
  int workers = 7;
  int parameter_servers = 1;
  std::string builder = "PS";
  std::string model = AUTODIST_SOURCE_DIR "/examples/fashion-mnist/fmnist_mlp.onnx";
  double rate = 0;  // jobs/s; 0 = as fast as the clients can
  int clients = 1;
  int operator_workers = 8;
  std::string operator_binary;  // default: autodist-operator next to this binary
  bool in_process = false;
  double timeout_s = 600;
  std::string json_path;
  std::string log_path;  // the operator's output; default: a temp file, removed
  std::string label;     // a name for this run in the JSON
  bool restart = false;  // then restart the operator and time its adoption of every job
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// --- timestamps from the store ---------------------------------------------------------------

// A watch sink that timestamps every event line when the store writes it (under the store's
// lock, at commit) and leaves the parsing to a consumer thread.
class StampedSink final : public autodist::k8s::WatchSink {
 public:
  struct Line {
    Clock::time_point at;
    std::string text;
  };

  void Write(const std::string& data) override {
    const Clock::time_point now = Clock::now();
    std::lock_guard lock(mutex_);
    if (closed_) return;
    buffer_ += data;
    size_t start = 0;
    for (size_t nl; (nl = buffer_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl > start) lines_.push_back({now, buffer_.substr(start, nl - start)});
    }
    buffer_.erase(0, start);
    cv_.notify_one();
  }
  void Close() override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    cv_.notify_one();
  }
  size_t Backlog() const override { return 0; }

  // Waits up to `timeout` for lines; returns what is there.
  std::vector<Line> Take(std::chrono::milliseconds timeout, bool* closed) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return !lines_.empty() || closed_; });
    std::vector<Line> out;
    out.swap(lines_);
    *closed = closed_;
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string buffer_;
  std::vector<Line> lines_;
  bool closed_ = false;
};

struct JobTimes {
  Clock::time_point create_sent{};
  Clock::time_point create_returned{};
  std::optional<Clock::time_point> first_status;  // the operator's first status write
  std::optional<Clock::time_point> all_pods;      // the last of its pods was created
  int pods = 0;
};

std::string JobName(int i) { return fmt::format("scale-{:05d}", i); }

int JobIndex(const std::string& name) {
  if (name.rfind("scale-", 0) != 0) return -1;
  return std::atoi(name.c_str() + 6);
}

json JobObject(const Options& options, int i) {
  return {
      {"apiVersion", "autodist.io/v1alpha1"},
      {"kind", "AutoDistJob"},
      {"metadata", {{"name", JobName(i)}, {"namespace", "default"}}},
      {"spec",
       {{"model",
         {{"path", options.model}, {"loss", "loss"}, {"logits", "logits"}, {"labels", "label"}}},
        {"data", {{"format", "fashion-mnist"}, {"batchSizePerReplica", 32}}},
        {"training", {{"steps", 100}, {"optimizer", {{"name", "sgd"}, {"lr", 0.01}}}}},
        {"strategy", {{"builder", options.builder}}},
        {"resources",
         {{"workers", options.workers}, {"parameterServers", options.parameter_servers}}}}},
  };
}

// --- small HTTP and /proc helpers ----------------------------------------------------------------

// GET/DELETE http://127.0.0.1:port/path with HTTP/1.0; returns {status, body} ({0, ""} when the
// server cannot be reached).
std::pair<int, std::string> HttpCall(int port, const std::string& method, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {0, ""};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return {0, ""};
  }
  const std::string request =
      method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    close(fd);
    return {0, ""};
  }
  std::string response;
  char buffer[65536];
  for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) response.append(buffer, n);
  close(fd);
  int status = 0;
  if (std::sscanf(response.c_str(), "HTTP/%*s %d", &status) != 1) return {0, ""};
  const size_t body = response.find("\r\n\r\n");
  return {status, body == std::string::npos ? "" : response.substr(body + 4)};
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Sums of the Prometheus samples we need from the operator's /metrics.
struct MetricsSample {
  double reconciles = 0;
  std::map<std::string, double> reconciles_by_result;
  double duration_sum = 0;
  double duration_count = 0;
  double queue_depth = 0;
  double api_errors = 0;
  double jobs_created = 0;
};

std::optional<MetricsSample> Scrape(int port) {
  const auto [status, body] = HttpCall(port, "GET", "/metrics");
  if (status != 200) return std::nullopt;
  MetricsSample sample;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const std::string series = line.substr(0, space);
    const double value = std::strtod(line.c_str() + space + 1, nullptr);
    const auto starts = [&](const char* prefix) { return series.rfind(prefix, 0) == 0; };
    if (starts("autodist_operator_reconcile_total")) {
      sample.reconciles += value;
      const size_t result = series.find("result=\"");
      if (result != std::string::npos) {
        const size_t end = series.find('"', result + 8);
        sample.reconciles_by_result[series.substr(result + 8, end - result - 8)] += value;
      }
    } else if (starts("autodist_operator_reconcile_duration_seconds_sum")) {
      sample.duration_sum += value;
    } else if (starts("autodist_operator_reconcile_duration_seconds_count")) {
      sample.duration_count += value;
    } else if (starts("autodist_operator_workqueue_depth")) {
      sample.queue_depth += value;
    } else if (starts("autodist_operator_api_errors_total")) {
      sample.api_errors += value;
    } else if (starts("autodist_operator_jobs_created_total")) {
      sample.jobs_created += value;
    }
  }
  return sample;
}

// VmHWM / VmRSS of a process in MB (1e6 bytes), from /proc/<pid>/status.
std::pair<double, double> ProcessMemoryMb(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  double hwm = 0;
  double rss = 0;
  for (std::string line; std::getline(in, line);) {
    long kb = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %ld kB", &kb) == 1) hwm = kb * 1024.0 / 1e6;
    if (std::sscanf(line.c_str(), "VmRSS: %ld kB", &kb) == 1) rss = kb * 1024.0 / 1e6;
  }
  return {hwm, rss};
}

// Field `number` (1-based, as proc(5) counts them) of /proc/<pid>/stat, or 0 when the process is
// gone. Fields are counted after the command name, which may itself contain spaces.
unsigned long ProcStatField(pid_t pid, int number) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == number) return std::stoul(field);
  }
  return 0;
}

// utime + stime (fields 14 and 15) of a process in seconds.
double ProcessCpuSeconds(pid_t pid) {
  return static_cast<double>(ProcStatField(pid, 14) + ProcStatField(pid, 15)) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Context switches of every thread of a process (voluntary + involuntary), from
// /proc/<pid>/task/*/status; threads that already exited are not counted.
double ProcessContextSwitches(pid_t pid) {
  double total = 0;
  std::error_code error;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid), error)) {
    std::ifstream in(task.path() / "status");
    for (std::string line; std::getline(in, line);) {
      long n = 0;
      if (std::sscanf(line.c_str(), "voluntary_ctxt_switches: %ld", &n) == 1) total += n;
      if (std::sscanf(line.c_str(), "nonvoluntary_ctxt_switches: %ld", &n) == 1) total += n;
    }
  }
  return total;
}

// Minor page faults of a process (field 10).
double ProcessMinorFaults(pid_t pid) { return static_cast<double>(ProcStatField(pid, 10)); }

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto tv = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return tv(usage.ru_utime) + tv(usage.ru_stime);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  // Nearest rank.
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * values.size()));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

// --- the operator under test ---------------------------------------------------------------------

class OperatorUnderTest {
 public:
  virtual ~OperatorUnderTest() = default;
  virtual int metrics_port() const = 0;
  virtual pid_t pid() const = 0;  // the process holding the operator
  virtual bool Alive() = 0;
  virtual void Stop() = 0;
};

class ChildOperator final : public OperatorUnderTest {
 public:
  ChildOperator(const Options& options, const std::string& kubeconfig, const std::string& log)
      : port_(FreePort()) {
    std::vector<std::string> args = {options.operator_binary,
                                     "--kubeconfig",
                                     kubeconfig,
                                     "--workers",
                                     std::to_string(options.operator_workers),
                                     "--metrics-bind-address",
                                     fmt::format("127.0.0.1:{}", port_),
                                     "--log-level",
                                     "warn",
                                     "--log-format",
                                     "json"};
    // Everything the child needs is prepared before fork: this process has threads, so the
    // child may only make async-signal-safe calls until it execs.
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + log);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // dies with the benchmark, however that ends
      dup2(fd, 1);
      dup2(fd, 2);
      execv(argv[0], argv.data());
      static const char kMessage[] = "exec autodist-operator failed\n";
      (void)!write(2, kMessage, sizeof(kMessage) - 1);
      _exit(127);
    }
    close(fd);
  }
  ~ChildOperator() override { Stop(); }

  int metrics_port() const override { return port_; }
  pid_t pid() const override { return pid_; }
  bool Alive() override {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    return true;
  }
  void Stop() override {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  int port_;
  pid_t pid_ = -1;
};

class InProcessOperator final : public OperatorUnderTest {
 public:
  InProcessOperator(const Options& options, const std::string& kubeconfig) {
    autodist::app::ConfigureLogging("json", "warn");
    autodist::app::OperatorOptions operator_options;
    operator_options.workers = options.operator_workers;
    operator_options.log_level = "warn";
    autodist::app::FinishOperatorOptions(operator_options);
    metrics_ = std::make_unique<autodist::controller::OperatorMetrics>(registry_);
    autodist::kube::ClientOptions client_options;
    client_options.observer = metrics_->ClientObserver();
    client_ = std::make_unique<autodist::kube::Client>(autodist::kube::LoadKubeconfig(kubeconfig),
                                                       client_options);
    jobs_ = std::make_unique<autodist::app::JobController>(*client_, operator_options, *metrics_);
    autodist::observe::OperabilityOptions server_options;
    server_options.address = "127.0.0.1";
    server_options.port = 0;
    server_ = std::make_unique<autodist::observe::OperabilityServer>(server_options, registry_);
    server_->AddReadyCheck("caches", [this] { return jobs_->Synced(); });
    server_->Start();
    starter_ = std::thread([this] { jobs_->Start(); });
  }
  ~InProcessOperator() override { Stop(); }

  int metrics_port() const override { return server_->port(); }
  pid_t pid() const override { return getpid(); }
  bool Alive() override { return true; }
  void Stop() override {
    if (!jobs_) return;
    if (starter_.joinable()) starter_.join();
    jobs_->Stop();
    server_->Stop();
    jobs_.reset();
  }

 private:
  autodist::observe::Registry registry_;
  std::unique_ptr<autodist::controller::OperatorMetrics> metrics_;
  std::unique_ptr<autodist::kube::Client> client_;
  std::unique_ptr<autodist::app::JobController> jobs_;
  std::unique_ptr<autodist::observe::OperabilityServer> server_;
  std::thread starter_;
};

// --- the run -------------------------------------------------------------------------------------

int Run(const Options& options) {
  const int pods_per_job = options.workers + options.parameter_servers;
  autodist::k8s::TestApiServerOptions server_options;
  // Room for every event of the run in the watch history (no 410 relists mid-run).
  server_options.api.store.history_size =
      std::max<size_t>(10000, static_cast<size_t>(options.jobs) * (pods_per_job + 8));
  autodist::k8s::TestApiServer server(server_options);
  server.CreateFromFile(autodist::k8s::AutoDistJobCrdPath());
  autodist::k8s::Store& store = server.store();

  std::vector<JobTimes> times(options.jobs);
  std::mutex times_mutex;
  std::atomic<int> completed{0};

  // Watch pods and jobs from "now" (nothing of ours exists yet).
  const auto pods_resource = store.FindResource("", "v1", "pods");
  const auto jobs_resource = store.FindResource("autodist.io", "v1alpha1", "autodistjobs");
  if (!pods_resource || !jobs_resource) throw std::runtime_error("the double serves no pods/jobs");
  auto pod_sink = std::make_shared<StampedSink>();
  auto job_sink = std::make_shared<StampedSink>();
  autodist::k8s::WatchStart start;
  auto pod_watch = store.Watch(*pods_resource, start, {}, pod_sink);
  auto job_watch = store.Watch(*jobs_resource, start, {}, job_sink);
  std::atomic<bool> stop_consumers{false};
  std::atomic<bool> watch_closed{false};
  std::thread pod_consumer([&] {
    while (!stop_consumers) {
      bool closed = false;
      for (const StampedSink::Line& line : pod_sink->Take(std::chrono::milliseconds(50), &closed)) {
        const json event = json::parse(line.text, nullptr, false);
        if (!event.is_object() || event.value("type", "") != "ADDED") continue;
        const json& labels = event["object"]["metadata"].value("labels", json::object());
        const int i = JobIndex(labels.value("autodist.io/job-name", ""));
        if (i < 0 || i >= options.jobs) continue;
        std::lock_guard lock(times_mutex);
        if (++times[i].pods == pods_per_job) {
          times[i].all_pods = line.at;
          ++completed;
        }
      }
      if (closed) watch_closed = true;
    }
  });
  std::thread job_consumer([&] {
    while (!stop_consumers) {
      bool closed = false;
      for (const StampedSink::Line& line : job_sink->Take(std::chrono::milliseconds(50), &closed)) {
        const json event = json::parse(line.text, nullptr, false);
        if (!event.is_object() || event.value("type", "") != "MODIFIED") continue;
        const json& object = event["object"];
        if (!object.contains("status")) continue;
        const int i = JobIndex(object["metadata"].value("name", ""));
        if (i < 0 || i >= options.jobs) continue;
        std::lock_guard lock(times_mutex);
        if (!times[i].first_status) times[i].first_status = line.at;
      }
      if (closed) watch_closed = true;
    }
  });

  // The operator, ready (informers synced) before the first job.
  const std::string log_path =
      options.log_path.empty()
          ? (fs::temp_directory_path() / fmt::format("operator-scale-{}.log", getpid())).string()
          : options.log_path;
  const auto start_operator = [&]() -> std::unique_ptr<OperatorUnderTest> {
    std::unique_ptr<OperatorUnderTest> started;
    if (options.in_process) {
      started = std::make_unique<InProcessOperator>(options, server.kubeconfig_path());
    } else {
      started = std::make_unique<ChildOperator>(options, server.kubeconfig_path(), log_path);
    }
    const Clock::time_point ready_deadline = Clock::now() + std::chrono::seconds(60);
    while (HttpCall(started->metrics_port(), "GET", "/readyz").first != 200) {
      if (!started->Alive() || Clock::now() > ready_deadline) {
        std::ifstream log(log_path);
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        throw std::runtime_error("the operator did not become ready:\n" + text);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return started;
  };
  std::unique_ptr<OperatorUnderTest> op = start_operator();
  const auto [idle_hwm, idle_rss] = ProcessMemoryMb(op->pid());
  const std::optional<MetricsSample> before = Scrape(op->metrics_port());
  if (!before) throw std::runtime_error("cannot read the operator's /metrics");
  HttpCall(server.port(), "DELETE", "/_testdouble/stats");
  const double operator_cpu_before = options.in_process ? 0 : ProcessCpuSeconds(op->pid());
  const double switches_before = ProcessContextSwitches(op->pid());
  const double faults_before = ProcessMinorFaults(op->pid());
  const double self_cpu_before = SelfCpuSeconds();

  fmt::print(stderr,
             "operator_scale_bench: {} jobs x {} pods ({} workers + {} PS, builder {}), rate {}, "
             "{} client(s), {} operator workers, {} server threads, operator {}; load average {}\n",
             options.jobs, pods_per_job, options.workers, options.parameter_servers,
             options.builder, options.rate > 0 ? fmt::format("{}/s", options.rate) : "max",
             options.clients, options.operator_workers, options.server_threads,
             options.in_process ? "in-process" : fmt::format("pid {}", op->pid()), LoadAverage());

  // Create the jobs.
  std::atomic<int> create_errors{0};
  std::string first_error;
  std::mutex error_mutex;
  const Clock::time_point t0 = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < options.clients; ++c) {
    clients.emplace_back([&, c] {
      autodist::kube::ClientOptions client_options;
      client_options.user_agent = "kubectl/operator-scale-bench";
      autodist::kube::Client client(autodist::kube::LoadKubeconfig(server.kubeconfig_path()),
                                    client_options);
      for (int i = c; i < options.jobs; i += options.clients) {
        if (options.rate > 0) {
          std::this_thread::sleep_until(t0 + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(i / options.rate)));
        }
        const json object = JobObject(options, i);
        const Clock::time_point sent = Clock::now();
        try {
          client.Create(autodist::kube::resources::kAutoDistJobs, "default", object);
        } catch (const std::exception& e) {
          if (create_errors++ == 0) {
            std::lock_guard lock(error_mutex);
            first_error = e.what();
          }
        }
        const Clock::time_point returned = Clock::now();
        std::lock_guard lock(times_mutex);
        times[i].create_sent = sent;
        times[i].create_returned = returned;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  const Clock::time_point created_all = Clock::now();

  // Wait until every job has its pods, sampling the operator's memory meanwhile.
  const Clock::time_point deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(options.timeout_s));
  double peak_rss = 0;
  while (completed < options.jobs - create_errors && Clock::now() < deadline && op->Alive()) {
    peak_rss = std::max(peak_rss, ProcessMemoryMb(op->pid()).second);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const Clock::time_point pods_done = Clock::now();
  // Then until the operator is quiet: the reconcile count unchanged for 2 s and the queue empty.
  MetricsSample last = *before;
  Clock::time_point last_change = pods_done;
  while (op->Alive() && Clock::now() < deadline + std::chrono::seconds(30)) {
    const std::optional<MetricsSample> now = Scrape(op->metrics_port());
    peak_rss = std::max(peak_rss, ProcessMemoryMb(op->pid()).second);
    if (!now) break;
    if (now->reconciles != last.reconciles) last_change = Clock::now();
    last = *now;
    if (now->queue_depth == 0 && Clock::now() - last_change > std::chrono::seconds(2)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const bool alive = op->Alive();
  const auto [hwm, rss] = alive ? ProcessMemoryMb(op->pid()) : std::pair<double, double>{0, 0};
  const double operator_cpu =
      options.in_process || !alive ? NAN : ProcessCpuSeconds(op->pid()) - operator_cpu_before;
  const double self_cpu = SelfCpuSeconds() - self_cpu_before;
  const double switches = alive ? ProcessContextSwitches(op->pid()) - switches_before : NAN;
  const double faults = alive ? ProcessMinorFaults(op->pid()) - faults_before : NAN;
  const json stats =
      json::parse(HttpCall(server.port(), "GET", "/_testdouble/stats").second, nullptr, false);
  const std::string load_after = LoadAverage();
  // What the operator's caches hold (its informers list and watch these four kinds): JSON text
  // per job by kind, and for pods also the part the reconciler reads (metadata and status).
  json cached_bytes = json::object();
  double cached_total = 0;
  double pod_bytes_without_spec = 0;
  for (const auto& [group, version, plural] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"autodist.io", "v1alpha1", "autodistjobs"},
           {"", "v1", "pods"},
           {"", "v1", "configmaps"},
           {"", "v1", "services"}}) {
    const auto resource = store.FindResource(group, version, plural);
    if (!resource) continue;
    double bytes = 0;
    for (const autodist::k8s::ObjectPtr& object : store.ListAll(*resource, "default")) {
      bytes += static_cast<double>(object->json.size());
      if (plural == "pods") {
        json slim = object->object;
        slim.erase("spec");
        pod_bytes_without_spec += static_cast<double>(slim.dump().size());
      }
    }
    cached_bytes[plural] = bytes / options.jobs;
    cached_total += bytes;
  }
  op->Stop();

  // A restarted operator adopts every job at once: its informers list them all, so its queue
  // starts full, and each job's reconcile finds its children in place (nothing to create). The
  // time to reconcile them all is the reconcile loop's throughput apart from creating pods.
  json adoption = nullptr;
  if (options.restart && alive) {
    op.reset();
    const Clock::time_point restarted = Clock::now();
    op = start_operator();
    const Clock::time_point ready = Clock::now();
    const Clock::time_point adopt_deadline = ready + std::chrono::seconds(120);
    std::optional<MetricsSample> sample;
    while (op->Alive() && Clock::now() < adopt_deadline) {
      sample = Scrape(op->metrics_port());
      if (sample && sample->reconciles >= options.jobs && sample->queue_depth == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double drain = Seconds(Clock::now() - ready);
    const double adopted = sample ? sample->reconciles : 0;
    adoption = {{"readySeconds", Seconds(ready - restarted)},
                {"reconciles", adopted},
                {"seconds", drain},
                {"reconcilesPerSecond", drain > 0 ? adopted / drain : NAN},
                {"apiErrors", sample ? sample->api_errors : NAN}};
    fmt::print(
        "restart: ready after {:.2f} s (lists and syncs), then {:.0f} reconciles in {:.2f} s "
        "= {:.0f}/s\n",
        Seconds(ready - restarted), adopted, drain, drain > 0 ? adopted / drain : NAN);
    op->Stop();
  }
  stop_consumers = true;
  pod_consumer.join();
  job_consumer.join();
  pod_watch->Stop();
  job_watch->Stop();

  // Figures.
  std::vector<double> to_pods;
  std::vector<double> to_status;
  std::vector<double> create_call;
  int missing = 0;
  Clock::time_point last_pods = t0;
  for (const JobTimes& t : times) {
    create_call.push_back(Ms(t.create_returned - t.create_sent));
    if (t.first_status) to_status.push_back(Ms(*t.first_status - t.create_sent));
    if (t.all_pods) {
      to_pods.push_back(Ms(*t.all_pods - t.create_sent));
      last_pods = std::max(last_pods, *t.all_pods);
    } else {
      ++missing;
    }
  }
  const double wall = Seconds(last_pods - t0);
  const double active = Seconds(std::max(last_change, last_pods) - t0);
  const double reconciles = last.reconciles - before->reconciles;
  const double durations = last.duration_count - before->duration_count;
  const double mean_reconcile_ms =
      durations > 0 ? 1000 * (last.duration_sum - before->duration_sum) / durations : NAN;
  json requests = json::object();
  double operator_requests = 0;
  if (stats.is_object() && stats.contains("requests")) {
    for (const auto& [verb, by_resource] : stats["requests"].items()) {
      double total = 0;
      for (const auto& [resource, n] : by_resource.items()) total += n.get<double>();
      // The benchmark's own creates of the jobs are not the operator's.
      if (verb == "create" && by_resource.contains("autodistjobs.autodist.io")) {
        total -= by_resource["autodistjobs.autodist.io"].get<double>();
      }
      requests[verb] = total;
      operator_requests += total;
    }
  }
  json result_by = json::object();
  for (const auto& [result, n] : last.reconciles_by_result) {
    result_by[result] =
        n - (before->reconciles_by_result.contains(result) ? before->reconciles_by_result.at(result)
                                                           : 0);
  }

  const json result = {
      {"label", options.label},
      {"jobs", options.jobs},
      {"podsPerJob", pods_per_job},
      {"builder", options.builder},
      {"rate", options.rate},
      {"clients", options.clients},
      {"operatorWorkers", options.operator_workers},
      {"serverThreads", options.server_threads},
      {"inProcess", options.in_process},
      {"createErrors", create_errors.load()},
      {"jobsWithoutAllPods", missing},
      {"createSeconds", Seconds(created_all - t0)},
      {"createRatePerSecond", options.jobs / Seconds(created_all - t0)},
      {"createCallMs",
       {{"p50", Percentile(create_call, 50)}, {"p99", Percentile(create_call, 99)}}},
      {"toFirstStatusMs",
       {{"p50", Percentile(to_status, 50)},
        {"p99", Percentile(to_status, 99)},
        {"max", Percentile(to_status, 100)}}},
      {"toAllPodsMs",
       {{"p50", Percentile(to_pods, 50)},
        {"p90", Percentile(to_pods, 90)},
        {"p99", Percentile(to_pods, 99)},
        {"max", Percentile(to_pods, 100)}}},
      {"wallSeconds", wall},
      {"activeSeconds", active},
      {"reconciles", reconciles},
      {"reconcilesByResult", result_by},
      {"reconcilesPerJob", reconciles / options.jobs},
      {"reconcilesPerSecond", active > 0 ? reconciles / active : NAN},
      // The same span per job: comparable across operators that need fewer reconciles a job.
      {"jobsPerSecond", active > 0 ? options.jobs / active : NAN},
      {"meanReconcileMs", mean_reconcile_ms},
      {"apiErrors", last.api_errors - before->api_errors},
      {"operatorRequests", operator_requests},
      {"operatorRequestsPerJob", operator_requests / options.jobs},
      {"operatorRequestsByVerb", requests},
      {"operatorIdleRssMb", idle_rss},
      {"operatorPeakRssMb", std::max(hwm, peak_rss)},
      {"operatorFinalRssMb", rss},
      {"operatorCpuSeconds", operator_cpu},
      {"benchProcessCpuSeconds", self_cpu},
      {"operatorCpuMsPerJob", 1000 * operator_cpu / options.jobs},
      {"operatorContextSwitchesPerJob", switches / options.jobs},
      {"operatorMinorFaultsPerJob", faults / options.jobs},
      {"cachedJsonBytesPerJob", cached_total / options.jobs},
      {"cachedJsonBytesPerJobByKind", cached_bytes},
      {"podJsonBytesPerJobWithoutSpec", pod_bytes_without_spec / options.jobs},
      {"loadAverageAfter", load_after},
      {"restart", adoption},
  };
  fmt::print(
      "jobs {} x {} pods, rate {}, {} op workers{}: create→all pods p50 {:.1f} ms, p99 {:.1f} ms, "
      "max {:.1f} ms; create→first status p50 {:.1f} ms, p99 {:.1f} ms; wall {:.2f} s (creates "
      "took {:.2f} s); {:.0f} reconciles ({:.2f}/job) = {:.0f}/s ({:.0f} jobs/s) over {:.2f} s, "
      "mean {:.2f} ms; "
      "{} RSS idle {:.1f} MB, peak {:.1f} MB; CPU operator {:.2f} s, double+clients {:.2f} "
      "s ({:.1f} ms/job, {:.0f} context switches/job, {:.0f} page faults/job); {:.1f} API "
      "requests/job; missing {}, create errors {}; load average {}\n",
      options.jobs, pods_per_job, options.rate > 0 ? fmt::format("{}/s", options.rate) : "max",
      options.operator_workers, options.in_process ? " (in-process)" : "", Percentile(to_pods, 50),
      Percentile(to_pods, 99), Percentile(to_pods, 100), Percentile(to_status, 50),
      Percentile(to_status, 99), wall, Seconds(created_all - t0), reconciles,
      reconciles / options.jobs, active > 0 ? reconciles / active : NAN,
      active > 0 ? options.jobs / active : NAN, active, mean_reconcile_ms,
      options.in_process ? "whole-process" : "operator", idle_rss, std::max(hwm, peak_rss),
      operator_cpu, self_cpu, 1000 * operator_cpu / options.jobs, switches / options.jobs,
      faults / options.jobs, operator_requests / options.jobs, missing, create_errors.load(),
      load_after);
  if (create_errors > 0) fmt::print(stderr, "first create error: {}\n", first_error);
  if (watch_closed) fmt::print(stderr, "warning: a timing watch was closed by the double\n");
  if (!alive) {
    std::ifstream log(log_path);
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    fmt::print(stderr, "the operator exited during the run:\n{}\n", text);
  }
  if (!options.json_path.empty()) std::ofstream(options.json_path) << result.dump(2) << "\n";
  if (options.log_path.empty()) fs::remove(log_path);
  return missing == 0 && create_errors == 0 && alive ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("operator_scale_bench: N AutoDistJobs against the API-server test double");
  Options options;
  app.add_option("--jobs", options.jobs, "jobs to create")->check(CLI::PositiveNumber);
  app.add_option("--workers", options.workers, "workers per job")->check(CLI::PositiveNumber);
  app.add_option("--parameter-servers", options.parameter_servers, "parameter servers per job")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--builder", options.builder, "strategy builder of every job");
  app.add_option("--model", options.model, "the model (absolute path the operator reads)");
  app.add_option("--rate", options.rate, "jobs created per second; 0 = as fast as possible")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--clients", options.clients, "client threads creating jobs")
      ->check(CLI::PositiveNumber);
  app.add_option("--operator-workers", options.operator_workers, "the operator's --workers")
      ->check(CLI::PositiveNumber);
  app.add_option("--operator", options.operator_binary,
                 "the autodist-operator binary (default: next to this one)");
  app.add_flag("--in-process", options.in_process,
               "run the JobController in this process (profiling; RSS is the whole process)");
  app.add_option("--timeout", options.timeout_s, "seconds to wait for all pods");
  app.add_option("--json", options.json_path, "write the figures there as JSON");
  app.add_option("--operator-log", options.log_path, "keep the operator's output there");
  app.add_option("--label", options.label, "a name for this run in the JSON");
  app.add_flag("--restart", options.restart,
               "then restart the operator and time how fast it reconciles every existing job");
  app.add_option("--server-threads", options.server_threads,
                 "cpprestsdk pool threads of this process (the double and the clients)")
      ->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  // Before the double or a client touches the pool.
  crossplat::threadpool::initialize_with_threads(static_cast<size_t>(options.server_threads));
  if (options.operator_binary.empty()) {
    options.operator_binary =
        (fs::canonical("/proc/self/exe").parent_path() / "autodist-operator").string();
  }
  if (!options.in_process && access(options.operator_binary.c_str(), X_OK) != 0) {
    fmt::print(stderr, "operator_scale_bench: {} is not executable (build autodist-operator)\n",
               options.operator_binary);
    return 2;
  }
  if (!fs::exists(options.model)) {
    fmt::print(stderr, "operator_scale_bench: no model at {}\n", options.model);
    return 2;
  }
  try {
    return Run(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "operator_scale_bench: {}\n", e.what());
    return 1;
  }
}
