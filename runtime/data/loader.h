// Loader: the endless stream of training batches for one rank. Epoch by epoch it orders the rows
// (a reproducible shuffle seeded with seed + epoch), takes this rank's shard (PyTorch
// DistributedSampler semantics), cuts it into batches and converts them to feeds on a background
// thread that keeps up to `prefetch` batches ready, so input preparation overlaps compute; for a
// GPU that thread also starts their copies to the device.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/data/dataset.h"
#include "runtime/tensor/tensor.h"

namespace autodist::data {

struct LoaderOptions {
  int64_t batch_size = 64;  // rows per batch, >= 1
  bool shuffle = true;      // shuffle the rows every epoch (else dataset order)
  uint64_t seed = 0;        // epoch e uses the permutation seeded with seed + e
  // DistributedSampler's drop_last: drop the tail of the (shuffled) rows that does not divide
  // evenly by world_size; otherwise pad by repeating rows from the start.
  bool drop_last = false;
  // DataLoader's drop_last: drop this rank's last batch when it has fewer than batch_size rows.
  bool drop_last_batch = false;
  int rank = 0;        // in [0, world_size)
  int world_size = 1;  // data-parallel replicas sharing the data
  int prefetch = 2;    // batches prepared ahead on a background thread; 0: on the caller's thread
  // Where the batches are read. On a device the prefetch thread also starts each prepared batch's
  // copy there (tensor::TensorUpload: through pinned memory, overlapping the device's compute),
  // and Next() returns the feeds on the device.
  tensor::Device device = tensor::Device::Cpu();
};

// A place in the stream, stored in checkpoints: the next batch to produce.
struct Position {
  int64_t epoch = 0;
  int64_t batch = 0;  // in [0, batches_per_epoch)
  bool operator==(const Position&) const = default;
};

struct Batch {
  std::map<std::string, tensor::Tensor> feeds;  // graph input name -> [rows, row shape...]
  Position position;                            // where this batch sits in the stream
  int64_t rows = 0;
};

class Loader {
 public:
  // Validates the options (batch_size >= 1, rank in [0, world_size), prefetch >= 0), the dataset
  // (not empty; every rank gets rows and at least one batch per epoch), `row_shapes` (see
  // Dataset::FeedRowShapes) and `start` (epoch >= 0, batch in [0, batches_per_epoch)), throwing
  // InvalidArgument; then starts the prefetch thread at `start`.
  Loader(std::shared_ptr<const Dataset> dataset, LoaderOptions options, RowShapes row_shapes,
         Position start = {});
  // Stops the prefetch thread, also mid-epoch or while it waits for room in the queue.
  ~Loader();
  Loader(Loader&&) noexcept;
  Loader& operator=(Loader&&) noexcept;

  // The next batch; after an epoch's last batch comes the next epoch's first, so it never ends.
  // An error while preparing a batch (on the prefetch thread) is rethrown here, on this and every
  // later call. Not for concurrent calls from several threads.
  Batch Next();

  int64_t batches_per_epoch() const;
  // Rows this rank reads per epoch (DistributedSampler's num_samples).
  int64_t rows_per_epoch() const;
  // The position of the batch the next Next() returns (store it in a checkpoint; a Loader
  // constructed with it as `start` continues with exactly the batches that would have followed).
  Position position() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autodist::data
