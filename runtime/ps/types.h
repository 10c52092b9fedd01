// The parameter server's vocabulary, shared by the client (ps_client.h), the service
// (ps_service.h) and its state (ps_store.h): what a PS hosts, what a worker pushes and what comes
// back. Semantics: docs/parameter-servers.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/compress/compressor.h"
#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::ps {

// One tensor a PS hosts: a whole variable or a shard ("w/part_0:0"), with its PSSynchronizer
// settings.
struct HostedTensor {
  std::string name;
  bool sync = true;     // apply the mean of every replica's gradient once per step
  int staleness = 0;    // sync only: how many steps a worker may run ahead of the slowest
  bool sparse = false;  // gradients may arrive row-sparse
};

// The chief's Init: everything a PS needs before the first step.
struct PsInitRequest {
  std::vector<HostedTensor> tensors;
  std::string optimizer;  // sgd, adam, ... (optim::ParseOptimizerOptions)
  std::map<std::string, std::string> optimizer_options;
  int num_workers = 1;     // worker processes that push (ranks 0..num_workers-1)
  int total_replicas = 1;  // replicas of the whole job whose gradients make one synchronous step
  // The version every hosted tensor starts at: the step a resumed run continues from (0 for a
  // fresh run). A synchronous tensor's version is the number of the next step it waits for.
  int64_t start_step = 0;
  // Initial value of every hosted tensor (float32).
  std::map<std::string, tensor::Tensor> values;
  // Optimizer state to resume from, keyed "<tensor>/<slot>" (Optimizer::SaveState); may be
  // empty.
  std::map<std::string, tensor::Tensor> optimizer_state;
};

// A gradient to push, not owned: exactly one of dense and sparse is set. Row-sparse gradients
// always travel as rows: `compression` (the Strategy's PSSynchronizer.compressor) applies to
// dense ones only. The server decodes a compressed push back to float32, so nothing after the
// wire changes. docs/compression.md.
struct GradientRef {
  const tensor::Tensor* dense = nullptr;
  const tensor::SparseGradient* sparse = nullptr;
  compress::CompressorKind compression = compress::CompressorKind::kNone;
  double topk_fraction = 0.01;  // TopKCompressorEF; in (0, 1]
};

// What a worker holds of a hosted tensor: its value at `version`, as a server of `incarnation`
// (PsStore::incarnation) sent it. A Step may carry it for sparse tensors, so that the reply
// brings only the rows changed since (docs/parameter-servers.md, "Pulling only changed rows").
struct HeldVersion {
  uint64_t incarnation = 0;
  int64_t version = 0;
};

// One worker's push to one PS for one step.
struct PsStepRequest {
  int worker = 0;         // rank, for messages and validation
  int first_replica = 0;  // global index of the first replica the gradients cover
  int replicas = 1;       // how many replicas the gradients sum (gradients are SUMS, not means)
  int64_t step = 0;       // 0-based
  double learning_rate = 0;
  bool pull = true;  // return the values after the update (else versions only)
  std::map<std::string, GradientRef> gradients;
  // Sparse tensors pushed to whose value the worker holds: their replies may be changed rows.
  std::map<std::string, HeldVersion> held;
};

// What Step and Pull return. Pull with optimizer state adds the slots to `values` as
// "<tensor>/<slot>" (they have no version). A tensor whose Step reply is the rows changed since
// the request's HeldVersion is in `changed_rows` instead of `values`: its value at
// `versions[name]` is the held one with those rows replaced.
struct PsValues {
  std::map<std::string, int64_t> versions;
  std::map<std::string, tensor::Tensor> values;
  std::map<std::string, tensor::SparseGradient> changed_rows;
  uint64_t incarnation = 0;  // of the server that replied (PsStore::incarnation)
};

// One push's gradient bytes: as they travelled (encoded, plus 8 per index) and as they were
// decoded (float32 values, plus 8 per row index): their ratio is what compression saved.
struct PushedBytes {
  int64_t wire = 0;
  int64_t decoded = 0;
};

struct PsStats {
  int64_t bytes_pushed = 0;          // gradient bytes received as sent (values, rows, indices)
  int64_t bytes_pushed_decoded = 0;  // the same gradients decoded (float32 values, row indices)
  int64_t bytes_pulled = 0;          // value bytes sent (Step replies and Pull)
  int64_t version = 0;               // the lowest version among the hosted tensors
  int64_t steps = 0;    // updates every hosted tensor has received: version - start_step
  int64_t updates = 0;  // optimizer updates applied, summed over the hosted tensors
  int64_t pushes = 0;   // Step pushes accepted
};

}  // namespace autodist::ps
