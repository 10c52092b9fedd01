#include "tests/k8s/faults.h"

#include "tests/k8s/api_error.h"

namespace autodist::k8s {

std::string RequestAttributes::StatsKey() const {
  std::string key = group.empty() ? resource : resource + "." + group;
  if (!subresource.empty()) key += "/" + subresource;
  return key;
}

bool Faults::Matches(const std::string& pattern_verb, const std::string& pattern_resource,
                     const RequestAttributes& request) {
  if (pattern_verb != "*" && pattern_verb != request.verb) return false;
  if (pattern_resource == "*") return true;
  const std::string with_sub =
      request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
  return pattern_resource == with_sub || pattern_resource == request.StatsKey() ||
         (request.subresource.empty() && pattern_resource == request.resource);
}

void Faults::Configure(const nlohmann::json& body) {
  if (!body.is_object()) FailApi(400, "BadRequest", "faults: expected a JSON object");
  std::lock_guard lock(mutex_);
  if (body.value("reset", false)) {
    rules_.clear();
    latency_ = Latency{};
  }
  try {
    for (const auto& f : body.value("failures", nlohmann::json::array())) {
      FaultRule rule;
      rule.verb = f.value("verb", "*");
      rule.resource = f.value("resource", "*");
      rule.ns = f.value("namespace", "");
      rule.name = f.value("name", "");
      rule.code = f.value("code", 500);
      rule.count = f.value("count", 1);
      rule.retry_after_seconds = f.value("retryAfterSeconds", 1);
      rule.message = f.value("message", "");
      if (rule.code < 400 || rule.code > 599) {
        FailApi(400, "BadRequest", "faults: failures[].code: expected 400-599, got {}", rule.code);
      }
      rules_.push_back(rule);
    }
    if (body.contains("latency")) {
      const auto& l = body["latency"];
      latency_ = Latency{};
      if (l.is_object()) {
        latency_.delay = std::chrono::milliseconds(l.value("milliseconds", 0));
        latency_.verb = l.value("verb", "*");
        latency_.resource = l.value("resource", "*");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    FailApi(400, "BadRequest", "faults: malformed body: {}", e.what());
  }
}

nlohmann::json Faults::State() const {
  std::lock_guard lock(mutex_);
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& r : rules_) {
    failures.push_back({{"verb", r.verb},
                        {"resource", r.resource},
                        {"namespace", r.ns},
                        {"name", r.name},
                        {"code", r.code},
                        {"count", r.count},
                        {"retryAfterSeconds", r.retry_after_seconds}});
  }
  return {{"failures", failures},
          {"latency",
           {{"milliseconds", latency_.delay.count()},
            {"verb", latency_.verb},
            {"resource", latency_.resource}}}};
}

std::optional<FaultRule> Faults::Fire(const RequestAttributes& request) {
  std::lock_guard lock(mutex_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (!Matches(it->verb, it->resource, request)) continue;
    if (!it->ns.empty() && it->ns != request.ns) continue;
    if (!it->name.empty() && it->name != request.name) continue;
    FaultRule fired = *it;
    if (--it->count <= 0) rules_.erase(it);
    ++injected_;
    return fired;
  }
  return std::nullopt;
}

std::chrono::milliseconds Faults::DelayFor(const RequestAttributes& request) const {
  std::lock_guard lock(mutex_);
  if (!Matches(latency_.verb, latency_.resource, request)) return std::chrono::milliseconds(0);
  return latency_.delay;
}

void Faults::Count(const RequestAttributes& request) {
  std::lock_guard lock(mutex_);
  ++counts_[request.verb][request.StatsKey()];
  ++by_client_[request.client.empty() ? "unknown" : request.client][request.verb]
              [request.StatsKey()];
  ++total_;
}

nlohmann::json Faults::Stats() const {
  std::lock_guard lock(mutex_);
  return {{"requests", counts_},
          {"requestsByClient", by_client_},
          {"total", total_},
          {"faultsInjected", injected_}};
}

void Faults::ResetStats() {
  std::lock_guard lock(mutex_);
  counts_.clear();
  by_client_.clear();
  total_ = 0;
  injected_ = 0;
}

}  // namespace autodist::k8s
