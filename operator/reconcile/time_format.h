// metav1.Time on the wire: RFC 3339 in UTC with second precision ("2025-01-01T10:00:00Z").
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace autodist::reconcile {

using TimePoint = std::chrono::system_clock::time_point;

// Seconds precision, UTC, "Z" suffix; sub-second parts are truncated.
std::string FormatTime(TimePoint time);

// Accepts "Z" or a numeric offset and optional fractional seconds; nullopt for anything else.
std::optional<TimePoint> ParseTime(const std::string& text);

// Whole seconds from `now` until `then`, rounded up; at least 1 (a requeue hint is never zero).
std::chrono::seconds SecondsUntil(TimePoint now, TimePoint then);

}  // namespace autodist::reconcile
