#include "runtime/observe/device_spans.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::observe {
namespace {

constexpr std::string_view kAllReducePrefix = "nccl all-reduce ";

}  // namespace

void WriteDeviceCollective(Timeline& timeline, const DeviceCollectiveTimes& times) {
  std::string args = fmt::format(R"("gpu":{})", times.gpu);
  if (times.ready_us) {
    args += fmt::format(R"(,"ready_us":{})", *times.ready_us);
    timeline.InstantOn(timeline.Track(fmt::format("cuda:{} stream tensor", times.gpu)),
                       kDeviceCategory, fmt::format("{} ready", times.tag), *times.ready_us);
  }
  timeline.CompleteOn(timeline.Track(fmt::format("cuda:{} stream comm", times.gpu)),
                      kDeviceCategory, fmt::format("nccl {} {}", times.collective, times.tag),
                      times.start_us, times.end_us - times.start_us, args);
}

std::map<int, std::vector<DeviceReduction>> ReadDeviceReductions(const std::string& path) {
  nlohmann::json trace;
  try {
    trace = nlohmann::json::parse(ReadFileBytes(path, "timeline"));
  } catch (const nlohmann::json::exception& error) {
    Fail(ErrorCode::kInvalidArgument, "timeline {}: not JSON: {}", path, error.what());
  }
  const nlohmann::json& events =
      trace.is_object() && trace.contains("traceEvents") ? trace["traceEvents"] : trace;
  AD_CHECK(events.is_array(), kInvalidArgument,
           "timeline {}: expected an array of trace events (or an object with traceEvents)", path);
  std::map<int, std::vector<DeviceReduction>> reductions;
  for (const nlohmann::json& event : events) {
    if (!event.is_object() || event.value("ph", "") != "X" ||
        event.value("cat", "") != kDeviceCategory) {
      continue;
    }
    const std::string name = event.value("name", "");
    if (!name.starts_with(kAllReducePrefix)) continue;
    const nlohmann::json args = event.value("args", nlohmann::json::object());
    if (!args.contains("ready_us")) continue;  // a collective whose data was not marked ready
    try {
      const auto start = event.at("ts").get<int64_t>();
      reductions[event.at("pid").get<int>()].push_back(
          DeviceReduction{name.substr(kAllReducePrefix.size()), args.at("ready_us").get<int64_t>(),
                          start, start + event.at("dur").get<int64_t>()});
    } catch (const nlohmann::json::exception& error) {
      Fail(ErrorCode::kInvalidArgument, "timeline {}: device span '{}': {}", path, name,
           error.what());
    }
  }
  return reductions;
}

}  // namespace autodist::observe
