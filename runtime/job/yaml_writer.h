// Writing YAML that reads back with the same types: a string such as "8080" or "true" is quoted,
// so that neither our parser nor kubectl takes it for a number or a boolean. Internal.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace autodist::job::detail {

// Whether a plain (unquoted) scalar with this text would be read back as something else: as
// another type (empty, null, a boolean, a number), or as another string (leading or trailing
// whitespace, line breaks and other control characters).
bool NeedsQuotes(const std::string& text);

// Writes `text` as a string value (quoted when NeedsQuotes).
void EmitString(YAML::Emitter& out, const std::string& text);

// Writes `node` as loaded: quoted scalars of the input stay strings, plain ones stay plain.
void EmitNode(YAML::Emitter& out, const YAML::Node& node);

}  // namespace autodist::job::detail
