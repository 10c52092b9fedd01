// The parameter server's data channel: Steps over a plain TCP connection (frame_socket.h) instead
// of a gRPC stream, so that a tensor's bytes go from the sender's storage to the receiver's
// without protobuf copies and a Step costs no more thread hand-offs than the socket's own. Pull,
// Init and Stats stay on gRPC; the DataChannel RPC tells a client the channel's port.
//
// One Step on a connection (connections are persistent; one Step at a time on each):
//   client: STEP_HEADER (meta: StepHeader), GRADIENT* (meta: TensorPiece without data; data: the
//           piece's bytes, as gRPC's pieces would carry them), END (meta: empty)
//   server: (VERSION (meta: TensorVersion), VALUE? (meta: TensorPiece without data; data: the
//           value's bytes, or the changed rows' for a sparse piece, ps_service.proto StepHeader
//           `held`))* for each tensor pushed to, in name order, then STATUS (meta:
//           DataChannelStatus; code 0 when the Step succeeded)
// A Step the server rejects (a gradient of the wrong shape, say) is read to its END and answered
// with STATUS alone, and the connection stays usable. A malformed frame is answered with STATUS
// and the connection is closed. docs/parameter-servers.md "Data channel".
#pragma once

#include <cstdint>

namespace autodist::ps {

enum PsFrameKind : uint32_t {
  kStepHeaderFrame = 1,
  kGradientFrame = 2,
  kEndFrame = 3,
  kVersionFrame = 4,
  kValueFrame = 5,
  kStatusFrame = 6,
};

}  // namespace autodist::ps
