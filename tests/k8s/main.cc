// fake-apiserver: the Kubernetes API-server test double as a process, for kubectl and for the
// operator's end-to-end tests and benchmarks. Runs until SIGINT or SIGTERM.
//
//   fake-apiserver --port 0 --port-file /tmp/port   # prints and writes the port it listens on
//   fake-apiserver --port 8080 --node-agent         # ... and runs pods as local processes
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/common/error.h"
#include "tests/k8s/http_server.h"
#include "tests/k8s/node_agent.h"

namespace {

void WritePortFile(const std::string& path, int port) {
  // Written then renamed, so a reader polling for the file never sees it half-written.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << port << "\n";
    AD_CHECK(out.good(), kInvalidArgument, "--port-file '{}': cannot write '{}'", path, tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  AD_CHECK(!ec, kInvalidArgument, "--port-file '{}': cannot rename from '{}': {}", path, tmp,
           ec.message());
}

// "autodist-runtime=/path/to/autodist-runtime --flag" -> {"autodist-runtime", argv}.
std::pair<std::string, std::vector<std::string>> ParseEntrypoint(const std::string& text) {
  const size_t eq = text.find('=');
  AD_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < text.size(), kInvalidArgument,
           "--image-entrypoint '{}': expected IMAGE=PROGRAM [ARGS...]", text);
  std::vector<std::string> argv;
  std::istringstream words(text.substr(eq + 1));
  for (std::string word; words >> word;) argv.push_back(word);
  return {text.substr(0, eq), argv};
}

// "volcano" or "NAME=volcano|scheduler-plugins": the scheduler name the agent binds as a gang.
std::pair<std::string, autodist::k8s::GangScheduler> ParseGangScheduler(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string name = eq == std::string::npos ? text : text.substr(0, eq);
  const std::string kind = eq == std::string::npos ? text : text.substr(eq + 1);
  AD_CHECK(!name.empty() && (kind == "volcano" || kind == "scheduler-plugins"), kInvalidArgument,
           "--gang-scheduler '{}': expected volcano, or NAME=volcano or NAME=scheduler-plugins",
           text);
  return {name, kind == "volcano" ? autodist::k8s::GangScheduler::Volcano()
                                  : autodist::k8s::GangScheduler::SchedulerPlugins()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Kubernetes API-server test double (see docs/testing.md)"};
  std::string address = "127.0.0.1";
  int port = 0;
  std::string port_file;
  size_t history = 10000;
  int bookmark_ms = 1000;
  bool legacy_discovery = false;
  bool no_gc = false;
  app.add_option("--address", address, "IPv4 address to listen on")->default_str("127.0.0.1");
  app.add_option("--port", port, "Port to listen on; 0 picks a free one")->default_str("0");
  app.add_option("--port-file", port_file, "Write the port listened on to this file");
  app.add_option("--history", history,
                 "Watch events kept per resource; older resourceVersions "
                 "get 410 Gone")
      ->default_str("10000");
  app.add_option("--bookmark-interval-ms", bookmark_ms,
                 "How often watches with allowWatchBookmarks get a BOOKMARK")
      ->default_str("1000");
  app.add_flag("--legacy-discovery", legacy_discovery,
               "Never serve aggregated discovery (clients fall back to per-group documents)");
  app.add_flag("--no-garbage-collection", no_gc,
               "Keep objects whose ownerReferences name missing owners (cascading deletes of "
               "existing owners still happen)");
  bool node_agent = false;
  autodist::k8s::NodeAgentOptions agent;
  std::vector<std::string> entrypoints;
  int max_grace_ms = 30000;
  std::vector<std::string> gang_schedulers;
  app.add_flag("--node-agent", node_agent,
               "Run pods as local processes (a fake kubelet; docs/testing.md)");
  app.add_option("--node-name", agent.node_name, "Node the agent registers and binds pods to")
      ->default_str("fake-node");
  app.add_option("--pod-log-dir", agent.log_dir,
                 "Where containers' output goes (served as pods/log); default a temporary "
                 "directory removed on exit");
  app.add_option("--image-entrypoint", entrypoints,
                 "IMAGE=PROGRAM [ARGS...]: what runs for a container of IMAGE without a command "
                 "(repeatable)");
  app.add_option("--host-volume-root", agent.host_volume_root,
                 "DIR: configMap, secret and emptyDir volumes are written at their literal "
                 "mountPath, which must lie under DIR (default: none, such pods cannot start)");
  app.add_option("--max-grace-ms", max_grace_ms,
                 "Cap on a deleted pod's terminationGracePeriodSeconds before SIGKILL")
      ->default_str("30000");
  app.add_option("--gang-scheduler", gang_schedulers,
                 "volcano, or NAME=volcano|scheduler-plugins: pods naming that scheduler are "
                 "bound as gangs, once their PodGroup and minMember of them exist (repeatable)");
  CLI11_PARSE(app, argc, argv);

  // Signals are taken by sigwait below, not by handlers on the listener's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    autodist::k8s::ApiServerOptions options;
    options.store.history_size = history;
    options.bookmark_interval = std::chrono::milliseconds(bookmark_ms);
    options.aggregated_discovery = !legacy_discovery;
    options.collect_garbage = !no_gc;
    autodist::k8s::ApiServer api(options);
    autodist::k8s::HttpServer server(api, address, port);
    std::unique_ptr<autodist::k8s::NodeAgent> kubelet;
    if (node_agent) {
      for (const auto& e : entrypoints) agent.image_entrypoints.insert(ParseEntrypoint(e));
      for (const auto& g : gang_schedulers) agent.gang_schedulers.insert(ParseGangScheduler(g));
      agent.api_port = server.port();
      agent.max_grace = std::chrono::milliseconds(max_grace_ms);
      kubelet = std::make_unique<autodist::k8s::NodeAgent>(api, agent);
    }
    if (!port_file.empty()) WritePortFile(port_file, server.port());
    std::cout << "fake-apiserver listening on " << server.url() << std::endl;
    // Wakes once a second to surface a failure of the node agent's thread.
    const timespec second{1, 0};
    int received = -1;
    while (received < 0) {
      received = sigtimedwait(&signals, nullptr, &second);
      if (kubelet) kubelet->CheckHealthy();
    }
    std::cout << "fake-apiserver: stopping on signal " << received << std::endl;
  } catch (const autodist::Error& e) {
    std::cerr << "fake-apiserver: error: " << e.what() << "\n";
    return e.IsUserError() ? 2 : 1;
  }
  return 0;
}
