// A few steps of a job's merged timeline (runtime/observe/timeline_merge.h) drawn as SVG for the
// run report: one lane per member and thread on one time axis, spans nested by depth and colored
// by what they are (data, compute, synchronization, parameter servers, optimizer, collectives).
// The whole run stays in the trace file for Perfetto; the report shows where a typical step's
// time goes without any tool.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace autodist::launcher {

// The <svg> of `steps` consecutive steps from the middle of the run (the chief's "step N"
// spans), or an empty string when the trace has no step to show. `trace` is a merged trace:
// {"traceEvents": [...]} with process and thread names.
std::string RenderTimelineView(const nlohmann::json& trace, int steps = 3);

}  // namespace autodist::launcher
