#include "launcher/member_order.h"

#include <algorithm>
#include <utility>

namespace autodist::launcher {

std::tuple<int, long long, std::string> MemberOrderKey(const std::string& node) {
  for (const auto& [rank, prefix] : {std::pair<int, std::string>{0, "worker-"}, {1, "ps-"}}) {
    const std::string index = node.substr(std::min(prefix.size(), node.size()));
    if (node.starts_with(prefix) && !index.empty() && index.size() < 10 &&
        std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return {rank, std::stoll(index), ""};
    }
  }
  return {2, 0, node};
}

}  // namespace autodist::launcher
