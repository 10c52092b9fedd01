// The client side of the parameter server's data channel (ps_data_channel.h), used by PsClient
// once the server has announced a channel. Keeps a pool of idle connections: concurrent Steps
// (replica streams of one worker) each take their own, and a connection is reused for the next
// Step instead of being opened per call.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/compress/push_encoder.h"
#include "runtime/ps/types.h"
#include "runtime/rpc/frame_socket.h"
#include "runtime/security/job_credentials.h"
#include "runtime/security/tls_context.h"

namespace autodist::ps {

class PsDataChannelClient {
 public:
  // `timeout` bounds connecting and every send or receive of a Step. With `credentials` each
  // connection is mutual TLS (the server must hold a certificate of the same job). Replies are
  // received into `reply_staging`'s host staging memory (rpc::PieceAssembler).
  PsDataChannelClient(std::string host, int port, std::chrono::milliseconds timeout,
                      const std::shared_ptr<const security::JobCredentials>& credentials,
                      tensor::DeviceKind reply_staging = tensor::DeviceKind::kCpu);

  // Opens a connection now, so that a channel that cannot be reached is known before the first
  // Step. Throws Unavailable naming the address.
  void Connect();

  // One Step (PsClient::Step's contract); gradients are checked by the caller. `what` prefixes
  // errors: the server's (as ThrowRpcError maps them) and Unavailable for a broken connection.
  PsValues Step(const PsStepRequest& request, compress::PushEncoder& encoder,
                const std::string& what);

  int port() const { return port_; }

 private:
  // An idle connection, or a new one.
  std::unique_ptr<rpc::FrameSocket> Take();
  void Return(std::unique_ptr<rpc::FrameSocket> socket);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  tensor::DeviceKind reply_staging_;
  std::unique_ptr<security::TlsContext> tls_;  // nullptr: plaintext
  std::mutex mutex_;                           // guards idle_
  std::vector<std::unique_ptr<rpc::FrameSocket>> idle_;
};

}  // namespace autodist::ps
