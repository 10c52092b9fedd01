// What the all-reduces on the communicator's own links (peer_links.h) have in common: one object
// per message size, built once, run per call (internal to the Gloo communicator).
#pragma once

#include <cstddef>
#include <cstdint>

namespace autodist::collective::gloo_detail {

// Elements [begin, end) of an all-reduce's data.
struct ElementRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
};

class LinkAllReduce {
 public:
  virtual ~LinkAllReduce() = default;

  // Sums the object's count of elements at `data` across the ranks, in place.
  virtual void Run(void* data) = 0;

  // What one Run sends and receives on this rank, in bytes (message heads not counted).
  int64_t bytes_sent() const { return bytes_sent_; }
  int64_t bytes_received() const { return bytes_received_; }

 protected:
  int64_t bytes_sent_ = 0;
  int64_t bytes_received_ = 0;
};

}  // namespace autodist::collective::gloo_detail
