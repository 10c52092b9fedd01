// Time stamps, durations and identifiers in the formats the Kubernetes API uses.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace autodist::k8s {

// "2024-05-01T12:00:00Z": metav1.Time's wire format (second precision, UTC).
std::string NowRfc3339();
std::string FormatRfc3339(std::chrono::system_clock::time_point t);
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text);

// kubectl's AGE format (apimachinery duration.HumanDuration): "42s", "5m3s", "3h", "2d5h", ...
std::string HumanDuration(std::chrono::seconds d);

// A random RFC 4122 version-4 UID, as metadata.uid.
std::string NewUid();
// `n` random characters from the alphabet the API server uses for generateName suffixes.
std::string RandomSuffix(int n);

}  // namespace autodist::k8s
