// Row-sparse gradients (an embedding's) across the ranks of a communicator: every rank's indices
// and rows all-gathered, then merged on the host in rank order. Both all-reduce parts use it: the
// host's with one rank per worker, the devices' with one rank per replica (whose gradients stay
// where the communicator reads them: a GPU for NCCL).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/collective/communicator.h"
#include "runtime/tensor/sparse_gradient.h"

namespace autodist::sync {

struct GatheredSparse {
  tensor::SparseGradient merged;  // on the host: rows with the same index summed, rank order
  int64_t local_bytes = 0;        // this rank's indices and rows
  int64_t sent_bytes = 0;         // what the two all-gathers sent from this rank
};

// All-gathers `local` (its indices, then its rows, under `tag` + "/indices" and "/rows"; its
// tensors where `communicator` reads) and merges every rank's part (tensor::MergeSparse). Every
// rank calls it with the same dense shape; the row counts may differ.
GatheredSparse AllGatherSparse(collective::Communicator& communicator,
                               const tensor::SparseGradient& local, const std::string& tag);

}  // namespace autodist::sync
