#include "runtime/ps/data_channel_client.h"

#include <grpcpp/grpcpp.h>

#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "proto/ps_service.pb.h"
#include "runtime/common/error.h"
#include "runtime/observe/runtime_metrics.h"
#include "runtime/ps/data_channel.h"
#include "runtime/ps/gradient_push.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/rpc/tensor_wire.h"

namespace autodist::ps {
namespace {

using autodist::proto::TensorPiece;

// Compressed gradients go as one piece each: the channel has no message size to stay under.
constexpr int64_t kWholeTensor = std::numeric_limits<int64_t>::max();

// Sends one gradient: dense float32 and row-sparse ones straight from their storage, compressed
// ones as the encoder cuts them.
void SendGradient(rpc::FrameSocket& socket, const PsStepRequest& request, const std::string& name,
                  const GradientRef& gradient, compress::PushEncoder& encoder,
                  const std::string& what) {
  observe::Counter& sent = observe::ProcessMetrics().parameter_server_sent_bytes;
  const auto send = [&](const TensorPiece& piece, const void* data, size_t bytes) {
    socket.Send(kGradientFrame, piece, data, bytes);
    sent.Inc(static_cast<double>(rpc::PieceWireBytes(piece, bytes)));
  };
  if (gradient.sparse != nullptr) {
    const tensor::Tensor& rows = gradient.sparse->values;
    send(rpc::SparseHeader(name, *gradient.sparse, request.replicas), rows.raw(), rows.nbytes());
    return;
  }
  if (TravelsUncompressed(gradient)) {
    send(rpc::TensorHeader(name, *gradient.dense, request.replicas), gradient.dense->raw(),
         gradient.dense->nbytes());
    return;
  }
  EmitGradient(what, request.first_replica, name, gradient, request.replicas, kWholeTensor, encoder,
               [&send](TensorPiece&& piece) {
                 std::string data;
                 data.swap(*piece.mutable_data());
                 send(piece, data.data(), data.size());
               });
}

}  // namespace

PsDataChannelClient::PsDataChannelClient(
    std::string host, int port, std::chrono::milliseconds timeout,
    const std::shared_ptr<const security::JobCredentials>& credentials,
    tensor::DeviceKind reply_staging)
    : host_(std::move(host)),
      port_(port),
      timeout_(timeout),
      reply_staging_(reply_staging),
      tls_(credentials ? std::make_unique<security::TlsContext>(*credentials,
                                                                security::TlsContext::Side::kClient)
                       : nullptr) {}

void PsDataChannelClient::Connect() { Return(Take()); }

std::unique_ptr<rpc::FrameSocket> PsDataChannelClient::Take() {
  {
    const std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<rpc::FrameSocket> socket = std::move(idle_.back());
      idle_.pop_back();
      return socket;
    }
  }
  return rpc::FrameSocket::Connect(host_, port_, timeout_, tls_.get());
}

void PsDataChannelClient::Return(std::unique_ptr<rpc::FrameSocket> socket) {
  const std::lock_guard lock(mutex_);
  idle_.push_back(std::move(socket));
}

PsValues PsDataChannelClient::Step(const PsStepRequest& request, compress::PushEncoder& encoder,
                                   const std::string& what) {
  std::unique_ptr<rpc::FrameSocket> socket;
  PsValues out;
  std::optional<grpc::Status> status;
  try {
    socket = Take();
    autodist::proto::StepHeader header;
    header.set_worker(request.worker);
    header.set_first_replica(request.first_replica);
    header.set_replicas(request.replicas);
    header.set_step(request.step);
    header.set_learning_rate(request.learning_rate);
    header.set_pull(request.pull);
    AddHeldVersions(request, header);
    socket->Send(kStepHeaderFrame, header);
    for (const auto& [name, gradient] : request.gradients) {
      SendGradient(*socket, request, name, gradient, encoder, what);
    }
    socket->Send(kEndFrame, autodist::proto::DataChannelRequest());  // any empty message: no meta

    rpc::PieceAssembler assembler(what, rpc::kNoTotalLimit, reply_staging_);
    while (!status) {
      const std::optional<rpc::FrameHead> head = socket->ReadHead();
      AD_CHECK(head.has_value(), kUnavailable, "data channel {}: the server closed the connection",
               socket->peer());
      if (head->kind == kVersionFrame) {
        autodist::proto::TensorVersion version;
        AD_CHECK(version.ParseFromString(head->meta), kInternal,
                 "data channel {}: a VERSION frame without a TensorVersion", socket->peer());
        TakeVersion(version, out);
      } else if (head->kind == kValueFrame) {
        TensorPiece piece;
        AD_CHECK(piece.ParseFromString(head->meta) && piece.data().empty(), kInternal,
                 "data channel {}: a VALUE frame without a TensorPiece", socket->peer());
        assembler.AddFrom(
            piece, static_cast<int64_t>(head->data_bytes),
            [&socket](char* destination, size_t length) { socket->ReadData(destination, length); });
      } else {
        autodist::proto::DataChannelStatus meta;
        AD_CHECK(head->kind == kStatusFrame && meta.ParseFromString(head->meta), kInternal,
                 "data channel {}: a reply frame of unknown kind {}", socket->peer(), head->kind);
        status.emplace(static_cast<grpc::StatusCode>(meta.code()), meta.message());
      }
    }
    TakeReplyValues(assembler, out);
  } catch (const Error& error) {
    // The connection is in an unknown state: it closes with `socket`. Errors of the socket do
    // not name the call yet; the encoder's and the assembler's do.
    if (std::string_view(error.what()).starts_with(what)) throw;
    Fail(error.code(), "{}: {}", what, error.what());
  }
  // A Step that ended with a status leaves the connection ready for the next one.
  Return(std::move(socket));
  if (!status->ok()) rpc::ThrowRpcError(*status, what);
  return out;
}

}  // namespace autodist::ps
