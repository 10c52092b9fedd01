// One gradient of a push on its way to the wire, the same for both transports (gRPC pieces and
// the data channel): row-sparse gradients as rows, dense float32 ones as they are or compressed by
// the push's compressor (runtime/compress/push_encoder.h), as tensor_wire.h pieces. And the
// values a Step's reply brings back, taken the same way from either transport.
#pragma once

#include <cstdint>
#include <string>

#include "proto/ps_service.pb.h"
#include "runtime/compress/push_encoder.h"
#include "runtime/ps/types.h"
#include "runtime/rpc/tensor_wire.h"

namespace autodist::ps {

// Throws InvalidArgument naming `what` and the tensor unless exactly one of dense and sparse is
// set and, for a compressed dense gradient, it is float32 and can be compressed as asked
// (compress::CheckPushCompression).
void CheckGradientRef(const std::string& what, const std::string& name,
                      const GradientRef& gradient);

// Whether `gradient` travels straight from its storage: row-sparse, or dense and uncompressed.
bool TravelsUncompressed(const GradientRef& gradient);

// The options `encoder` compresses a dense gradient with.
compress::CompressorOptions PushCompressorOptions(const GradientRef& gradient);

// Emits `gradient` (checked with CheckGradientRef) as pieces named `name`, compressing a dense
// one through `encoder` for the stream starting at `first_replica`.
void EmitGradient(const std::string& what, int first_replica, const std::string& name,
                  const GradientRef& gradient, int32_t replicas, int64_t piece_bytes,
                  compress::PushEncoder& encoder, const rpc::PieceSink& sink);

// Moves the values `assembler` rebuilt into `out` (changed rows, which come as sparse pieces,
// into out.changed_rows) and counts their bytes as the process's parameter-server bytes received
// (runtime/observe/runtime_metrics.h).
void TakeReplyValues(rpc::PieceAssembler& assembler, PsValues& out);

// Puts `request.held` into a Step's header.
void AddHeldVersions(const PsStepRequest& request, autodist::proto::StepHeader& header);

// Takes a reply's version of one tensor, and the incarnation of the server that sent it, into
// `out`.
void TakeVersion(const autodist::proto::TensorVersion& version, PsValues& out);

}  // namespace autodist::ps
