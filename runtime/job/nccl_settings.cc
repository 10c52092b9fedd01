#include "runtime/job/nccl_settings.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace autodist::job {

bool IsNcclSocketIfname(const std::string& text) {
  std::string_view list = text;
  if (!list.empty() && (list.front() == '^' || list.front() == '=')) list.remove_prefix(1);
  if (list.empty() || list.front() == ',' || list.back() == ',') return false;
  char previous = ',';
  for (const char c : list) {
    const bool name_char = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' ||
                           c == '.' || c == '-' || c == ':';
    if (!name_char && c != ',') return false;
    if (c == ',' && previous == ',') return false;  // an empty prefix would match every interface
    previous = c;
  }
  return true;
}

bool IsNcclDebugLevel(const std::string& text) {
  constexpr std::array<std::string_view, 4> kLevels = {"VERSION", "WARN", "INFO", "TRACE"};
  return std::ranges::any_of(kLevels, [&text](std::string_view level) { return text == level; });
}

std::vector<std::pair<std::string, std::string>> NcclEnvironment(const NcclSpec& settings,
                                                                 const NcclSpec& fallback) {
  std::vector<std::pair<std::string, std::string>> environment;
  const std::string& ifname =
      settings.socket_ifname.empty() ? fallback.socket_ifname : settings.socket_ifname;
  if (!ifname.empty()) environment.emplace_back("NCCL_SOCKET_IFNAME", ifname);
  const std::string& debug = settings.debug.empty() ? fallback.debug : settings.debug;
  if (!debug.empty()) environment.emplace_back("NCCL_DEBUG", debug);
  if (const std::optional<bool> ib =
          settings.ib_disable ? settings.ib_disable : fallback.ib_disable) {
    environment.emplace_back("NCCL_IB_DISABLE", *ib ? "1" : "0");
  }
  return environment;
}

}  // namespace autodist::job
