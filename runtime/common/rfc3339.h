// RFC 3339 timestamps as the Kubernetes API writes them (metav1.Time: UTC, second precision,
// "2025-01-01T10:00:00Z"), for the operator's status, Events and logs and for credentials'
// expiry times.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace autodist {

using SystemTime = std::chrono::system_clock::time_point;

// Seconds precision, UTC, "Z" suffix; sub-second parts are truncated.
std::string FormatRfc3339(SystemTime time);

// Accepts "Z" (or "z") or a numeric offset and optional fractional seconds; nullopt for anything
// else. No time zone or locale of the machine is involved.
std::optional<SystemTime> ParseRfc3339(const std::string& text);

}  // namespace autodist
