// Fault injection and request statistics for tests, driven through the control endpoint
// (/_testdouble/faults, /_testdouble/stats; docs/testing.md describes the JSON).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace autodist::k8s {

// What a request is, in Kubernetes authorization terms.
struct RequestAttributes {
  std::string verb;      // get, list, watch, create, update, patch, delete, deletecollection
  std::string resource;  // plural
  std::string group;
  std::string subresource;  // "" or "status"
  std::string ns;
  std::string name;
  // The client's product: the User-Agent up to its first '/' or space ("kubectl",
  // "autodist-operator"), as audit logs tell clients apart.
  std::string client;

  // "pods", "pods/status", "autodistjobs.autodist.io": the key statistics are kept under.
  std::string StatsKey() const;
};

struct FaultRule {
  std::string verb = "*";
  std::string resource = "*";  // plural, plural.group, plural/subresource or "*"
  std::string ns;              // "" = any
  std::string name;            // "" = any
  int code = 500;
  int count = 1;                // requests left to fail
  int retry_after_seconds = 1;  // 429 only
  std::string message;
};

struct Latency {
  std::chrono::milliseconds delay{0};
  std::string verb = "*";
  std::string resource = "*";
};

class Faults {
 public:
  // Applies a POST /_testdouble/faults body: {"reset", "failures": [...], "latency": {...}}.
  // closeWatches/compactHistory are the server's business. Throws ApiError 400 on a bad body.
  void Configure(const nlohmann::json& body);
  nlohmann::json State() const;

  // The failure to answer `request` with (consuming one of its count), if any.
  std::optional<FaultRule> Fire(const RequestAttributes& request);
  std::chrono::milliseconds DelayFor(const RequestAttributes& request) const;

  void Count(const RequestAttributes& request);
  nlohmann::json Stats() const;
  void ResetStats();

 private:
  static bool Matches(const std::string& pattern_verb, const std::string& pattern_resource,
                      const RequestAttributes& request);

  mutable std::mutex mutex_;
  std::vector<FaultRule> rules_;
  Latency latency_;
  std::map<std::string, std::map<std::string, long>> counts_;  // verb -> resource -> count
  // client -> verb -> resource -> count
  std::map<std::string, std::map<std::string, std::map<std::string, long>>> by_client_;
  long total_ = 0;
  long injected_ = 0;
};

}  // namespace autodist::k8s
