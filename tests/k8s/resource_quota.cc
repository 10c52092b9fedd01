#include "tests/k8s/resource_quota.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include "tests/k8s/api_error.h"
#include "tests/k8s/pod_status.h"

namespace autodist::k8s {
namespace {

// The quota key's resource of a container and where it is read: "cpu" and "requests.cpu" ->
// {requests, cpu}; "limits.memory" -> {limits, memory}; "requests.nvidia.com/gpu" -> {requests,
// nvidia.com/gpu}. Not for counts, nor for what pods do not use (requests.storage: claims).
struct ComputeKey {
  std::string field;
  std::string resource;
  bool must_specify = false;  // cpu and memory: every container must set them
};

std::optional<ComputeKey> ComputeKeyOf(const std::string& key) {
  const auto basic = [](const std::string& resource) {
    return resource == "cpu" || resource == "memory" || resource == "ephemeral-storage";
  };
  const auto required = [](const std::string& resource) {
    return resource == "cpu" || resource == "memory";
  };
  if (basic(key)) return ComputeKey{"requests", key, required(key)};
  for (const char* field : {"requests", "limits"}) {
    const std::string prefix = std::string(field) + ".";
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string resource = key.substr(prefix.size());
    // Extended resources (a domain-qualified name) are quota'd by their requests only.
    const bool extended = resource.find('/') != std::string::npos;
    if (basic(resource) || (extended && std::string(field) == "requests")) {
      return ComputeKey{field, resource, required(resource)};
    }
  }
  return std::nullopt;
}

bool CountsPods(const std::string& key) { return key == "pods" || key == "count/pods"; }

const nlohmann::json& Containers(const nlohmann::json& pod) {
  static const nlohmann::json kNone = nlohmann::json::array();
  const auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return kNone;
  const auto containers = spec->find("containers");
  return containers != spec->end() && containers->is_array() ? *containers : kNone;
}

// The container's amount of `resource` in `field`; a request defaults to the limit, as the API
// server's defaulting sets it before admission.
std::optional<long double> Amount(const nlohmann::json& container, const ComputeKey& key) {
  const nlohmann::json resources = container.value("resources", nlohmann::json::object());
  for (const char* from : {"requests", "limits"}) {
    if (key.field == "limits" && std::string(from) == "requests") continue;
    const nlohmann::json values = resources.value(from, nlohmann::json::object());
    const auto found = values.find(key.resource);
    if (found == values.end()) continue;
    return ParseQuantity(found->is_string() ? found->get<std::string>() : found->dump());
  }
  return std::nullopt;
}

// What `pod` is charged for `key`.
long double Usage(const nlohmann::json& pod, const std::string& key) {
  if (CountsPods(key)) return 1;
  const std::optional<ComputeKey> compute = ComputeKeyOf(key);
  if (!compute.has_value()) return 0;
  long double total = 0;
  for (const nlohmann::json& container : Containers(pod)) {
    total += Amount(container, *compute).value_or(0);
  }
  return total;
}

// A quantity as the messages show it: whole numbers plain, fractions in milli-units ("500m"),
// memory and storage in the largest binary unit that divides them ("4Gi").
std::string Format(const std::string& key, long double value) {
  const bool whole = std::fabs(value - std::round(value)) < 1e-9L;
  if (!whole) return fmt::format("{}m", std::llround(value * 1000));
  const long long units = std::llround(value);
  if (key.find("memory") != std::string::npos || key.find("storage") != std::string::npos) {
    static constexpr std::array<std::pair<const char*, long long>, 5> kBinary = {
        {{"Pi", 1LL << 50},
         {"Ti", 1LL << 40},
         {"Gi", 1LL << 30},
         {"Mi", 1LL << 20},
         {"Ki", 1LL << 10}}};
    for (const auto& [suffix, factor] : kBinary) {
      if (units >= factor && units % factor == 0)
        return fmt::format("{}{}", units / factor, suffix);
    }
  }
  return std::to_string(units);
}

std::string Join(const std::map<std::string, std::string>& values) {
  std::string out;
  for (const auto& [key, value] : values) {
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", key, value);
  }
  return out;
}

}  // namespace

std::optional<long double> ParseQuantity(const std::string& text) {
  size_t at = 0;
  if (at < text.size() && (text[at] == '+' || text[at] == '-')) ++at;
  const size_t digits = at;
  int points = 0;
  while (at < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.')) {
    points += text[at] == '.' ? 1 : 0;
    ++at;
  }
  if (at == digits || points > 1) return std::nullopt;
  char* end = nullptr;
  const std::string number = text.substr(0, at);
  const long double value = std::strtold(number.c_str(), &end);
  if (end != number.c_str() + number.size()) return std::nullopt;
  const std::string suffix = text.substr(at);
  // Decimal suffixes as powers of ten (divided, not multiplied by a fraction, so that "500m" is
  // exactly 0.5), binary ones as powers of 1024.
  static const std::map<std::string, int> kDecimal = {{"", 0},   {"n", -9}, {"u", -6}, {"m", -3},
                                                      {"k", 3},  {"M", 6},  {"G", 9},  {"T", 12},
                                                      {"P", 15}, {"E", 18}};
  static const std::map<std::string, int> kBinary = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                     {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  const auto scaled = [&](int power) {
    const long double factor = std::pow(10.0L, static_cast<long double>(std::abs(power)));
    return power >= 0 ? value * factor : value / factor;
  };
  if (const auto found = kDecimal.find(suffix); found != kDecimal.end()) {
    return scaled(found->second);
  }
  if (const auto found = kBinary.find(suffix); found != kBinary.end()) {
    return value * std::pow(1024.0L, static_cast<long double>(found->second));
  }
  // A decimal exponent: "1e3", "5E-2".
  if (suffix.size() >= 2 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    char* exponent_end = nullptr;
    const long exponent = std::strtol(suffix.c_str() + 1, &exponent_end, 10);
    if (*exponent_end == '\0' && exponent_end != suffix.c_str() + 1) {
      return scaled(static_cast<int>(exponent));
    }
  }
  return std::nullopt;
}

void EnforceResourceQuotas(const std::vector<nlohmann::json>& quotas,
                           const std::vector<nlohmann::json>& pods, const nlohmann::json& pod) {
  const std::string name = pod.value("metadata", nlohmann::json::object()).value("name", "");
  for (const nlohmann::json& quota : quotas) {
    const std::string quota_name =
        quota.value("metadata", nlohmann::json::object()).value("name", "");
    const nlohmann::json hard =
        quota.value("spec", nlohmann::json::object()).value("hard", nlohmann::json::object());
    if (!hard.is_object()) continue;
    // Every container must set the cpu and memory the quota constrains.
    std::vector<std::string> missing;
    for (const auto& [key, limit] : hard.items()) {
      const std::optional<ComputeKey> compute = ComputeKeyOf(key);
      if (!compute.has_value() || !compute->must_specify) continue;
      std::string lacking;
      for (const nlohmann::json& container : Containers(pod)) {
        if (Amount(container, *compute).has_value()) continue;
        lacking += (lacking.empty() ? "" : ",") + container.value("name", std::string());
      }
      if (!lacking.empty()) missing.push_back(fmt::format("{} for: {}", key, lacking));
    }
    if (!missing.empty()) {
      std::string list;
      for (const std::string& entry : missing) list += (list.empty() ? "" : "; ") + entry;
      FailApi(403, "Forbidden", "pods \"{}\" is forbidden: failed quota: {}: must specify {}", name,
              quota_name, list);
    }
    // Within the hard limits, counting every pod of the namespace that has not ended.
    std::map<std::string, std::string> requested, used, limited;
    for (const auto& [key, limit] : hard.items()) {
      if (!CountsPods(key) && !ComputeKeyOf(key).has_value()) continue;
      const std::optional<long double> cap =
          ParseQuantity(limit.is_string() ? limit.get<std::string>() : limit.dump());
      const long double asked = Usage(pod, key);
      if (!cap.has_value() || asked == 0) continue;
      long double in_use = 0;
      for (const nlohmann::json& other : pods) {
        if (!PodEnded(other)) in_use += Usage(other, key);
      }
      if (in_use + asked > *cap + 1e-9L) {
        requested[key] = Format(key, asked);
        used[key] = Format(key, in_use);
        limited[key] = Format(key, *cap);
      }
    }
    if (!requested.empty()) {
      FailApi(403, "Forbidden",
              "pods \"{}\" is forbidden: exceeded quota: {}, requested: {}, used: {}, limited: {}",
              name, quota_name, Join(requested), Join(used), Join(limited));
    }
  }
}

}  // namespace autodist::k8s
