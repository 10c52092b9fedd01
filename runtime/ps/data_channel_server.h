// The server side of the parameter server's data channel (ps_data_channel.h): a listener and one
// thread per connection, each serving the Steps of its connection one after another with the
// ParameterServerService's store, limits and traffic counters.
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/rpc/frame_socket.h"
#include "runtime/security/job_credentials.h"
#include "runtime/security/tls_context.h"

namespace autodist::ps {

class ParameterServerService;

class PsDataChannelServer {
 public:
  // Listens on host:0 and starts accepting: over mutual TLS with `credentials` (a client whose
  // certificate the job's CA did not issue is refused with one line on stderr saying why), else
  // plaintext. Throws Unavailable when it cannot listen.
  PsDataChannelServer(ParameterServerService& service, const std::string& host,
                      const std::shared_ptr<const security::JobCredentials>& credentials);
  ~PsDataChannelServer();
  PsDataChannelServer(const PsDataChannelServer&) = delete;
  PsDataChannelServer& operator=(const PsDataChannelServer&) = delete;

  int port() const { return listener_.port(); }

  // Stops accepting, closes every connection and joins the threads. A Step in flight fails on
  // the client with Unavailable: with the server's message when the store was shut down first
  // (ParameterServerService::Shutdown does), so that its wait ends and it can still reply
  // within a grace period of 2 s. Idempotent.
  void Stop();

 private:
  struct Connection {
    std::unique_ptr<rpc::FrameSocket> socket;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void AcceptLoop();
  // Serves Steps until the peer closes the connection or breaks the protocol.
  void Serve(rpc::FrameSocket& socket);
  // Serves one Step whose STEP_HEADER frame is `meta`; false when the connection must close.
  bool ServeStep(rpc::FrameSocket& socket, const std::string& meta);
  // Joins the threads of connections that ended. Called with mutex_ held.
  void ReapLocked();

  ParameterServerService& service_;
  std::unique_ptr<security::TlsContext> tls_;  // nullptr: plaintext
  rpc::TcpListener listener_;
  std::mutex mutex_;  // guards connections_ and stopped_
  std::list<std::unique_ptr<Connection>> connections_;
  bool stopped_ = false;
  std::thread acceptor_;
};

}  // namespace autodist::ps
