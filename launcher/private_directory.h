// A directory only this user can enter (mkdtemp: mode 0700, a name no other process can have
// chosen), removed with everything in it when the object goes: the run's credentials, the
// profile's calibration runs.
#pragma once

#include <string>

namespace autodist::launcher {

class PrivateDirectory {
 public:
  // Under the temporary directory (or /tmp), named "<prefix>-XXXXXX". Throws InvalidArgument
  // naming `what` it is for when it cannot be made.
  PrivateDirectory(const std::string& prefix, const std::string& what);
  ~PrivateDirectory();
  PrivateDirectory(const PrivateDirectory&) = delete;
  PrivateDirectory& operator=(const PrivateDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace autodist::launcher
