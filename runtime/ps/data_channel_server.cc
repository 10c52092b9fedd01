#include "runtime/ps/data_channel_server.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <iostream>
#include <optional>
#include <utility>

#include "proto/ps_service.pb.h"
#include "runtime/common/error.h"
#include "runtime/ps/data_channel.h"
#include "runtime/ps/service.h"
#include "runtime/ps/step_call.h"
#include "runtime/rpc/grpc_helpers.h"
#include "runtime/rpc/tensor_wire.h"

namespace autodist::ps {
namespace {

constexpr std::chrono::seconds kStopGrace{2};
// A client that connects and then says nothing (or speaks no TLS and waits) is dropped after this.
constexpr std::chrono::seconds kHandshakeTimeout{10};

// Ends a reply with `status`. False when the connection is broken.
bool SendStatus(rpc::FrameSocket& socket, const grpc::Status& status) {
  autodist::proto::DataChannelStatus meta;
  meta.set_code(static_cast<int32_t>(status.error_code()));
  meta.set_message(status.error_message());
  try {
    socket.Send(kStatusFrame, meta);
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool SendError(rpc::FrameSocket& socket, const Error& error) {
  return SendStatus(socket, rpc::ToStatus(error));
}

}  // namespace

PsDataChannelServer::PsDataChannelServer(
    ParameterServerService& service, const std::string& host,
    const std::shared_ptr<const security::JobCredentials>& credentials)
    : service_(service),
      tls_(credentials ? std::make_unique<security::TlsContext>(*credentials,
                                                                security::TlsContext::Side::kServer)
                       : nullptr),
      listener_(host),
      acceptor_([this] { AcceptLoop(); }) {}

PsDataChannelServer::~PsDataChannelServer() { Stop(); }

void PsDataChannelServer::Stop() {
  {
    const std::lock_guard lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  listener_.Shutdown();
  if (acceptor_.joinable()) acceptor_.join();
  std::list<std::unique_ptr<Connection>> connections;
  {
    const std::lock_guard lock(mutex_);
    connections.swap(connections_);
  }
  // Reads end first, so that idle connections close while a Step woken by the store's shutdown
  // still sends its STATUS (the client then reads why). A client that does not read its reply
  // gets the rest of the grace period, then its connection is cut.
  for (const auto& connection : connections) connection->socket->ShutdownRead();
  const auto grace_end = std::chrono::steady_clock::now() + kStopGrace;
  const auto all_done = [&] {
    return std::all_of(connections.begin(), connections.end(),
                       [](const auto& connection) { return connection->done.load(); });
  };
  while (!all_done() && std::chrono::steady_clock::now() < grace_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const auto& connection : connections) connection->socket->ShutdownBoth();
  for (const auto& connection : connections) connection->thread.join();
}

void PsDataChannelServer::AcceptLoop() {
  for (;;) {
    std::string peer;
    const int fd = listener_.Accept(peer);
    if (fd < 0) return;
    const std::lock_guard lock(mutex_);
    if (stopped_) {
      close(fd);
      return;
    }
    ReapLocked();
    auto connection = std::make_unique<Connection>();
    connection->socket = std::make_unique<rpc::FrameSocket>(fd, peer);
    Connection* serving = connection.get();
    serving->thread = std::thread([this, serving] {
      Serve(*serving->socket);
      // The peer sees the end now (FIN, even with its last bytes unread), not when the
      // connection is reaped; the descriptor goes then.
      serving->socket->ShutdownBoth();
      serving->done = true;
    });
    connections_.push_back(std::move(connection));
  }
}

void PsDataChannelServer::ReapLocked() {
  for (auto it = connections_.begin(); it != connections_.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
}

void PsDataChannelServer::Serve(rpc::FrameSocket& socket) {
  if (tls_) {
    try {
      socket.AcceptTls(*tls_, kHandshakeTimeout);
    } catch (const Error& error) {
      std::cerr << fmt::format("autodist: {}\n", error.what()) << std::flush;
      return;  // the connection closes; the server goes on serving the others
    }
  }
  try {
    while (std::optional<rpc::FrameHead> head = socket.ReadHead()) {
      if (head->kind != kStepHeaderFrame) {
        SendError(socket, Error(ErrorCode::kInvalidArgument,
                                fmt::format("data channel: a request starts with a STEP_HEADER "
                                            "frame (kind {}), got kind {}",
                                            static_cast<uint32_t>(kStepHeaderFrame), head->kind)));
        return;
      }
      if (!ServeStep(socket, head->meta)) return;
    }
  } catch (const Error& error) {
    // A malformed frame is answered before the connection closes; a broken one cannot be.
    if (error.code() == ErrorCode::kInvalidArgument) SendError(socket, error);
  } catch (const std::exception& error) {
    SendStatus(socket, grpc::Status(grpc::StatusCode::INTERNAL, error.what()));
  }
}

bool PsDataChannelServer::ServeStep(rpc::FrameSocket& socket, const std::string& meta) {
  const ParameterServerOptions& options = service_.options_;
  const auto deadline = PsStore::Clock::now() + options.wait_deadline;
  // The first reason to reject the Step; the rest of its frames are then read and dropped, so
  // that the connection stays in step with the client.
  std::optional<Error> rejected;
  std::optional<PsStepCall> call;
  autodist::proto::StepHeader header;
  if (!header.ParseFromString(meta)) {
    rejected.emplace(ErrorCode::kInvalidArgument,
                     "Step: the STEP_HEADER frame does not hold a StepHeader");
  } else {
    try {
      call.emplace(service_.store_, header, options.max_tensor_bytes, deadline,
                   [&socket] { return socket.PeerClosed(); });
    } catch (const Error& error) {
      rejected = error;
    }
  }

  for (;;) {
    const std::optional<rpc::FrameHead> head = socket.ReadHead();
    AD_CHECK(head.has_value(), kUnavailable, "data channel {}: closed inside a Step",
             socket.peer());
    if (head->kind == kEndFrame) break;
    AD_CHECK(head->kind == kGradientFrame, kInvalidArgument,
             "data channel: frame kind {} inside a Step; expected GRADIENT ({}) or END ({})",
             head->kind, static_cast<uint32_t>(kGradientFrame), static_cast<uint32_t>(kEndFrame));
    // Nothing larger than a tensor is read, even to be dropped.
    AD_CHECK(head->data_bytes <= static_cast<uint64_t>(options.max_tensor_bytes), kInvalidArgument,
             "data channel: a gradient frame of {} data bytes is larger than the limit of {} bytes",
             head->data_bytes, options.max_tensor_bytes);
    uint64_t consumed = 0;
    if (!rejected) {
      autodist::proto::TensorPiece piece;
      bool io_failed = false;
      try {
        AD_CHECK(piece.ParseFromString(head->meta) && piece.data().empty(), kInvalidArgument,
                 "{}: a GRADIENT frame's meta is not a TensorPiece without data", call->who());
        call->AddGradientFrom(piece, static_cast<int64_t>(head->data_bytes),
                              [&](char* destination, size_t length) {
                                io_failed = true;  // until the read below returns
                                socket.ReadData(destination, length);
                                io_failed = false;
                                consumed += length;
                              });
      } catch (const Error& error) {
        if (io_failed) return false;
        rejected = error;
      }
    }
    socket.SkipData(head->data_bytes - consumed);
  }
  if (rejected) return SendError(socket, *rejected);

  try {
    service_.CountPushed(call->Push());
    autodist::proto::TensorVersion version;
    version.set_incarnation(service_.store_.incarnation());
    call->AwaitVersions([&](const std::string& name, const PsSnapshot& snapshot) {
      version.set_name(name);
      version.set_version(snapshot.version);
      socket.Send(kVersionFrame, version);
      if (!call->pull()) return;
      if (snapshot.changed) {
        const tensor::Tensor& rows = snapshot.changed->values;
        socket.Send(kValueFrame, rpc::SparseHeader(name, *snapshot.changed, 0), rows.raw(),
                    rows.nbytes());
      } else {
        // Straight from the snapshot's storage, which no update modifies (copy-on-write).
        const tensor::Tensor& value = *snapshot.value;
        socket.Send(kValueFrame, rpc::TensorHeader(name, value, 0), value.raw(), value.nbytes());
      }
      service_.CountPulled(snapshot.ReplyBytes());
    });
  } catch (const Error& error) {
    return SendError(socket, error);
  }
  return SendStatus(socket, grpc::Status::OK);
}

}  // namespace autodist::ps
