// The model loader: bytes of an ONNX model or a serialized GraphItem through the checks, the
// variable table and the kernel preflight of both backends.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/graph/graph_item.h"
#include "runtime/graph/op_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const autodist::graph::GraphItem item = autodist::graph::GraphItem::Parse(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
    (void)item.TrainableVariables();
    for (const auto backend : {autodist::graph::Backend::kCpu, autodist::graph::Backend::kCuda}) {
      (void)autodist::graph::FindUnsupportedOps(item.ops(), backend);
    }
    std::string stripped;
    item.ToProto(/*strip_weights=*/true).SerializeToString(&stripped);
  } catch (const autodist::Error&) {
  }
  return 0;
}
