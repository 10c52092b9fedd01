// The rules every resource spec obeys, wherever its nodes come from (a YAML file, code, a job's
// replica counts), and the names both its readers and its writer use. Internal to the resource
// spec (resource_spec.cc, resource_spec_yaml.cc).
#pragma once

#include <vector>

#include "runtime/config/yaml_reader.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::strategy::detail {

// "worker", "ps" ("any" for kAny, which is never written).
const char* RoleName(NodeRole role);

// "nodes[<index>]".
std::string NodePath(size_t index);

// Checks `nodes` and puts them in their canonical form (device indices sorted and unique; a lone
// node is the chief). Errors are located through `context`: at the field's line when the nodes
// were read from YAML. Replica counts name pods, not machines, so they skip the loopback rule
// (`check_loopback` false).
void ValidateNodes(std::vector<NodeSpec>& nodes, const config::ParseContext& context,
                   bool check_loopback);

}  // namespace autodist::strategy::detail
