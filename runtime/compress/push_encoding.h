// A dense gradient compressed for a parameter-server push, and the per-stream state its error
// feedback keeps. The compressor decides what is sent (registry.h); the parameter-server client
// puts it on the wire (runtime/ps) and the server decodes it back to float32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/compress/compressor.h"

namespace autodist::compress {

// What one push carries for one dense float32 gradient.
struct EncodedPush {
  enum class Form {
    kHalves,  // every element as an IEEE float16 (`halves`)
    kTopK,    // zero except at `indices` (ascending), whose values are `values`
  };
  Form form = Form::kHalves;
  std::vector<uint16_t> halves;
  std::vector<int64_t> indices;
  std::vector<float> values;
};

// The state of one stream of pushes (one tensor, one replica stream, one server): the
// error-feedback residual, zero at first and sized to the tensor, and selection scratch kept so
// that a push allocates once.
struct PushState {
  std::vector<float> residual;
  std::vector<int64_t> scratch;
};

// Compresses the `count` float32 `values` of one push into `out`, updating `state`.
using PushEncodeFunction =
    std::function<void(const float* values, size_t count, const CompressorOptions& options,
                       PushState& state, EncodedPush& out)>;

}  // namespace autodist::compress
