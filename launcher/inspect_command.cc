// `autodist inspect`: the variable table of a model, and the GraphItem it compiles from.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "launcher/commands.h"
#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/graph/graph_item.h"
#include "runtime/graph/op_support.h"
#include "runtime/strategy/summary.h"

namespace autodist::cli {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string YesNo(bool value) { return value ? "yes" : "no"; }

graph::Backend ParseBackend(const std::string& name) {
  if (name == "cpu") return graph::Backend::kCpu;
  if (name == "cuda") return graph::Backend::kCuda;
  Fail(ErrorCode::kInvalidArgument, "--backend: expected cpu or cuda, got '{}'", name);
}

}  // namespace

void RunInspect(const InspectOptions& options, std::ostream& out) {
  const graph::GraphItem item = graph::GraphItem::Load(options.model);
  const graph::Backend backend = ParseBackend(options.backend);
  graph::CheckOpsSupported(item.ops(), backend, options.model);
  const std::vector<graph::Variable>& variables = item.variables();

  // Column widths fit the longest name and shape, so large models stay readable.
  size_t name_width = 4;
  size_t shape_width = 5;
  for (const auto& variable : variables) {
    name_width = std::max(name_width, variable.name.size());
    shape_width = std::max(shape_width, ShapeText(variable.shape).size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<8}  {:>12}  {:<8}  {:<13}  {}\n", "NAME", name_width,
                     "SHAPE", shape_width, "DTYPE", "BYTES", "GRADIENT", "PARTITIONABLE",
                     "TRAINABLE");
  int64_t total_bytes = 0;
  int trainable = 0;
  int sparse = 0;
  for (const auto& variable : variables) {
    out << fmt::format("{:<{}}  {:<{}}  {:<8}  {:>12}  {:<8}  {:<13}  {}\n", variable.name,
                       name_width, ShapeText(variable.shape), shape_width,
                       graph::DataTypeName(variable.data_type), variable.bytes,
                       !variable.trainable ? "none" : (variable.sparse ? "sparse" : "dense"),
                       YesNo(variable.partitionable), YesNo(variable.trainable));
    total_bytes += variable.bytes;
    trainable += variable.trainable ? 1 : 0;
    sparse += variable.sparse ? 1 : 0;
  }
  out << fmt::format("{} variables ({} trainable, {} sparse), {} ({} bytes)\n", variables.size(),
                     trainable, sparse, strategy::FormatBytes(total_bytes), total_bytes);
  out << fmt::format("{} nodes; every op has a kernel on {}\n", item.ops().nodes.size(),
                     graph::BackendName(backend));

  if (!options.output.empty()) {
    std::string bytes;
    item.ToProto(options.strip_weights).SerializeToString(&bytes);
    WriteFileBytes(options.output, bytes);
    out << fmt::format("wrote {}GraphItem to {} ({})\n",
                       options.strip_weights ? "weight-stripped " : "", options.output,
                       strategy::FormatBytes(static_cast<int64_t>(bytes.size())));
  }
}

}  // namespace autodist::cli
