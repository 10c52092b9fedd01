#include "runtime/observe/timeline_merge.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::observe {
namespace {

// The events of a timeline file. A process that died leaves no closing bracket, and may leave
// half an event after the last whole one: the array is closed after the last whole event.
nlohmann::json ReadEvents(const std::string& path) {
  const std::string text = ReadFileBytes(path, "timeline");
  nlohmann::json events = nlohmann::json::parse(text, nullptr, false);
  if (events.is_discarded()) events = nlohmann::json::parse(text + "\n]", nullptr, false);
  if (events.is_discarded()) {
    // Events are written one per line, each line but the last ending in ",".
    const size_t last_whole = text.rfind("},\n");
    events = nlohmann::json::parse(
        last_whole == std::string::npos ? std::string("[]") : text.substr(0, last_whole + 1) + "]",
        nullptr, false);
  }
  AD_CHECK(events.is_array(), kInvalidArgument,
           "timeline {}: not a trace-event array (written by --timeline)", path);
  return events;
}

}  // namespace

int MergeTimelines(const std::vector<TimelineSource>& sources, const std::string& out_path) {
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  AD_CHECK(out.good(), kInvalidArgument, "timeline {}: cannot create it", out_path);
  // One member in memory at a time: its events go out before the next file is read.
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  const auto emit = [&](const nlohmann::json& event) {
    out << (first ? "" : ",\n")
        << event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    first = false;
  };
  int count = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const TimelineSource& source = sources[i];
    if (!std::filesystem::exists(source.path)) continue;
    const int pid = static_cast<int>(i) + 1;
    nlohmann::json events = ReadEvents(source.path);
    emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", pid},
          {"tid", 0},
          {"args", {{"name", source.member}}}});
    emit({{"ph", "M"},
          {"name", "process_sort_index"},
          {"pid", pid},
          {"tid", 0},
          {"args", {{"sort_index", pid}}}});
    for (nlohmann::json& event : events) {
      AD_CHECK(event.is_object() && event.contains("ph") && event["ph"].is_string(),
               kInvalidArgument, "timeline {}: an event is not an object with a phase (\"ph\")",
               source.path);
      // The member's own process name gives way to the member's name.
      if (event["ph"] == "M" && event.contains("name") && event["name"] == "process_name") continue;
      event["pid"] = pid;
      emit(event);
    }
    ++count;
  }
  out << "\n]}\n";
  out.flush();
  AD_CHECK(out.good(), kInvalidArgument, "timeline {}: write failed", out_path);
  return count;
}

}  // namespace autodist::observe
