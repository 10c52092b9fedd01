// When an exported model's initializers go to a data file beside it (export.h).
#pragma once

#include <cstdint>

namespace autodist::exec {

struct ExportOptions {
  bool external_data = false;  // always write external data
  // Otherwise external data once the initializers total more than this many bytes: 1 GiB
  // leaves room under protobuf's 2 GiB for the graph and the rest of the message.
  uint64_t external_threshold_bytes = uint64_t{1} << 30;
};

}  // namespace autodist::exec
