// The order of a job's members by their node names, for commands that find members as files
// (`autodist timeline`, `autodist report`): workers by index, then parameter servers by index,
// then any other name alphabetically: the order `autodist run` lists them in.
#pragma once

#include <string>
#include <tuple>

namespace autodist::launcher {

// A key whose order is the members' order.
std::tuple<int, long long, std::string> MemberOrderKey(const std::string& node);

}  // namespace autodist::launcher
