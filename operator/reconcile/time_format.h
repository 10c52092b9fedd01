// Time in the reconciler: metav1.Time on the wire is RFC 3339 in UTC with second precision
// (runtime/common/rfc3339.h: FormatRfc3339, ParseRfc3339).
#pragma once

#include <chrono>

#include "runtime/common/rfc3339.h"

namespace autodist::reconcile {

using TimePoint = SystemTime;

// Whole seconds from `now` until `then`, rounded up; at least 1 (a requeue hint is never zero).
std::chrono::seconds SecondsUntil(TimePoint now, TimePoint then);

}  // namespace autodist::reconcile
