#include "operator/app/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>

#include "runtime/common/rfc3339.h"

namespace autodist::app {
namespace {

std::atomic<bool> json_format{true};

std::shared_ptr<spdlog::logger> Logger() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    auto made = spdlog::stderr_logger_mt("autodist-operator");
    made->set_pattern("%v");  // the record is formatted here, whole
    return made;
  }();
  return logger;
}

}  // namespace

void ConfigureLogging(const std::string& format, const std::string& level) {
  json_format = format == "json";
  Logger()->set_level(spdlog::level::from_str(level));
  Logger()->flush_on(spdlog::level::trace);
}

void Log(spdlog::level::level_enum level, const std::string& message,
         const nlohmann::json& fields) {
  const auto& logger = Logger();
  if (!logger->should_log(level)) return;
  const std::string time = FormatRfc3339(std::chrono::system_clock::now());
  const std::string level_name(spdlog::level::to_string_view(level).data(),
                               spdlog::level::to_string_view(level).size());
  if (json_format) {
    nlohmann::json record = {{"ts", time}, {"level", level_name}, {"msg", message}};
    for (const auto& [key, value] : fields.items()) record[key] = value;
    logger->log(level, "{}", record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  std::string line = time + " " + level_name + " " + message;
  for (const auto& [key, value] : fields.items()) {
    line += " " + key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  logger->log(level, "{}", line);
}

}  // namespace autodist::app
