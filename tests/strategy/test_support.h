// Helpers shared by the strategy tests: hand-built variables and resource specs.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph/variable.h"
#include "runtime/strategy/resource_spec.h"

namespace autodist::strategy::testing {

// A float32 variable; bytes follow from the shape.
inline graph::Variable FloatVariable(std::string name, std::vector<int64_t> shape,
                                     bool sparse = false, bool partitionable = true) {
  graph::Variable variable;
  variable.name = std::move(name);
  variable.shape = std::move(shape);
  variable.bytes = graph::NumElements(variable.shape) * 4;
  variable.sparse = sparse;
  variable.partitionable = partitionable;
  variable.gradient_name = variable.name + "_grad";
  return variable;
}

// `count` GPU-less nodes 10.0.0.1, 10.0.0.2, ...; the first is chief.
inline ResourceSpec CpuNodes(int count) {
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < count; ++i) {
    NodeSpec node;
    node.address = "10.0.0." + std::to_string(i + 1);
    node.cpus = {0};
    node.chief = i == 0;
    nodes.push_back(node);
  }
  return ResourceSpec::FromNodes(nodes, "test");
}

// One node per entry of `gpus_per_node`, with that many GPUs.
inline ResourceSpec GpuNodes(const std::vector<int>& gpus_per_node) {
  std::vector<NodeSpec> nodes;
  for (size_t i = 0; i < gpus_per_node.size(); ++i) {
    NodeSpec node;
    node.address = "10.0.1." + std::to_string(i + 1);
    node.cpus = {0};
    for (int g = 0; g < gpus_per_node[i]; ++g) node.gpus.push_back(g);
    node.chief = i == 0;
    nodes.push_back(node);
  }
  return ResourceSpec::FromNodes(nodes, "test");
}

}  // namespace autodist::strategy::testing
