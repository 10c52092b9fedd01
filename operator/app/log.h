// The operator's structured logs: one line per record, JSON (`--log-format json`, for log
// collectors) or `msg key=value ...` text, written through spdlog to stderr. Fields carry the
// job and the reconcile id so every line of one reconcile can be found together.
#pragma once

#include <spdlog/common.h>

#include <nlohmann/json.hpp>
#include <string>

namespace autodist::app {

// Sets the format ("json" or "text") and the lowest level written ("info", ...).
void ConfigureLogging(const std::string& format, const std::string& level);

void Log(spdlog::level::level_enum level, const std::string& message,
         const nlohmann::json& fields = nlohmann::json::object());

}  // namespace autodist::app
