// Where the autodist-runtime executable is, for the commands that start it (run, profile).
#pragma once

#include <string>

namespace autodist::launcher {

// `given` (a --runtime flag), else autodist-runtime next to this executable. Throws NotFound
// when it does not exist or is not executable.
std::string RuntimeExecutable(const std::string& given);

}  // namespace autodist::launcher
