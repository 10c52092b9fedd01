// Paths and non-empty strings, shared by the section readers.
#include <filesystem>

#include "runtime/job/parse_sections.h"

namespace autodist::job::detail {

std::string PathResolver::Resolve(const std::string& path) const {
  const std::filesystem::path given(path);
  if (manifest_dir_.empty() || given.is_absolute()) return path;
  return (std::filesystem::path(manifest_dir_) / given).lexically_normal().string();
}

std::string ReadNonEmptyString(const ParseContext& context, const YAML::Node& node,
                               const std::string& path) {
  std::string text = ReadString(context, node, path);
  if (text.empty()) context.Fail(path, "must not be empty");
  return text;
}

std::string ReadPath(const ParseContext& context, const YAML::Node& node, const std::string& path,
                     const PathResolver& resolver) {
  return resolver.Resolve(ReadNonEmptyString(context, node, path));
}

}  // namespace autodist::job::detail
