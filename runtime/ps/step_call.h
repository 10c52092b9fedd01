// One Step on the parameter server, whichever transport carries it (the gRPC Step stream or the
// data channel, ps_data_channel_server.h): each gradient piece is checked against what the server
// hosts before anything is allocated for it, the gradients are assembled and pushed to the store,
// and each tensor's value is handed back once it reaches the version the worker needs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "proto/ps_service.pb.h"
#include "runtime/ps/store.h"
#include "runtime/rpc/tensor_wire.h"

namespace autodist::ps {

// Rejects a tensor whose first piece announces more than `limit` bytes, before its storage is
// allocated. Negative dims are left to the assembler, which names them.
void CheckTensorSize(const std::string& who, const autodist::proto::TensorPiece& piece,
                     int64_t limit);

class PsStepCall {
 public:
  // Waits, until `deadline` or `cancelled`, for the chief's Init: workers may race it, and
  // gradients are checked against what Init hosts.
  PsStepCall(PsStore& store, const autodist::proto::StepHeader& header, int64_t max_tensor_bytes,
             PsStore::Clock::time_point deadline, PsStore::Cancelled cancelled);

  // "worker 1 step 7": names the call in errors.
  const std::string& who() const { return who_; }
  bool pull() const { return header_.pull(); }

  // Adds a gradient piece with its data (gRPC), or one whose `length` data bytes come from
  // `fill` (PieceAssembler::AddFrom). Throws InvalidArgument naming the call and the tensor.
  void AddGradient(const autodist::proto::TensorPiece& piece);
  void AddGradientFrom(const autodist::proto::TensorPiece& piece, int64_t length,
                       const rpc::PieceAssembler::Fill& fill);

  // Pushes what arrived to the store. Returns the gradient bytes as sent (compressed pushes
  // count what they saved) and as decoded.
  PushedBytes Push();

  // For each tensor pushed to, in name order: waits until it reaches the version this push
  // needs and calls `reply` with its snapshot. Throws Unavailable naming the replicas still
  // missing at the deadline, or when cancelled or shut down.
  void AwaitVersions(
      const std::function<void(const std::string& name, const PsSnapshot& snapshot)>& reply);

 private:
  // Checks the first piece of each tensor.
  void Announce(const autodist::proto::TensorPiece& piece);

  PsStore& store_;
  autodist::proto::StepHeader header_;
  int replicas_;
  int64_t max_tensor_bytes_;
  PsStore::Clock::time_point deadline_;
  PsStore::Cancelled cancelled_;
  std::string who_;
  rpc::PieceAssembler assembler_;
  std::set<std::string> announced_;
  std::map<std::string, int64_t> versions_;  // after Push: the version each reply waits for
  std::map<std::string, HeldVersion> held_;  // from the header: what the worker holds
};

}  // namespace autodist::ps
