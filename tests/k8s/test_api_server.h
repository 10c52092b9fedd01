// The whole test double in one object, for tests of other modules (the operator's): an
// in-process ApiServer served over HTTP on a free 127.0.0.1 port, a kubeconfig for it, and
// optionally the node agent running pods as local processes.
//
//   autodist::k8s::TestApiServer server({.node_agent = true});
//   server.CreateFromFile(autodist::k8s::AutoDistJobCrdPath());
//   RunOperator("--kubeconfig", server.kubeconfig_path());   // or talk to server.url()
//   server.faults().Configure({{"failures", {{{"verb", "update"}, {"code", 500}}}}});
//
// Link the CMake target k8s_test_double. docs/testing.md has the details.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/k8s/api_server.h"
#include "tests/k8s/http_server.h"
#include "tests/k8s/node_agent.h"

namespace autodist::k8s {

struct TestApiServerOptions {
  ApiServerOptions api;
  // Runs pods (NodeAgent) with `agent`'s options; api_port is filled in.
  bool node_agent = false;
  NodeAgentOptions agent;
};

class TestApiServer {
 public:
  // Serves at once; throws autodist::Error when it cannot listen.
  explicit TestApiServer(TestApiServerOptions options = {});
  // Stops the node agent (its containers), then the HTTP server and the API server.
  ~TestApiServer();
  TestApiServer(const TestApiServer&) = delete;
  TestApiServer& operator=(const TestApiServer&) = delete;

  // "http://127.0.0.1:PORT".
  std::string url() const { return http_->url(); }
  int port() const { return http_->port(); }
  // A kubeconfig (context "fake", namespace default, no credentials) for kubectl and clients;
  // removed with the server.
  const std::string& kubeconfig_path() const { return kubeconfig_path_; }

  ApiServer& api() { return *api_; }
  Store& store() { return api_->store(); }
  // Fault injection in-process: Configure() takes the JSON of POST /_testdouble/faults.
  Faults& faults() { return api_->faults(); }
  // Null unless options.node_agent.
  NodeAgent* node_agent() { return agent_.get(); }
  // The node agent's node is lost: the agent stops (its containers end) without a word to the
  // API, so its pods stay as last reported, and deleting one leaves it Terminating for good, as
  // on an unreachable node. A new node agent, node `replacement` with the same options, takes
  // the pods created from now on.
  void LoseNode(const std::string& replacement);

  // Creates an object (any served kind, by apiVersion and kind) as POST would, in-process and
  // never subject to injected faults. Returns the stored object; throws ApiError (an
  // autodist::Error) with the API's status code and message otherwise.
  nlohmann::json Create(const nlohmann::json& object);
  // Creates every document of a YAML or JSON manifest file (a CRD, a job, ...), in order.
  std::vector<nlohmann::json> CreateFromFile(const std::string& path);

 private:
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<NodeAgent> agent_;
  NodeAgentOptions agent_options_;
  std::string dir_;
  std::string kubeconfig_path_;
};

// A kubeconfig that points kubectl at `url` over plain HTTP (context "fake", namespace default).
std::string KubeconfigFor(const std::string& url);

// The product's AutoDistJob CRD (crds/autodistjobs.autodist.io.yaml in the source tree).
std::string AutoDistJobCrdPath();
// The scheduler-plugins PodGroup CRD (scheduling.x-k8s.io/v1alpha1) for gang-scheduling tests.
std::string PodGroupCrdPath();
// Volcano's PodGroup CRD (scheduling.volcano.sh/v1beta1).
std::string VolcanoPodGroupCrdPath();

}  // namespace autodist::k8s
