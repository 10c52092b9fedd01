// Where communicators are found: each backend registers itself under a name ("gloo" here; "nccl"
// from gpu/), and a job picks one at run time by name, with options every backend understands.
// Consumers link autodist_collective whole, so that no registration is dropped by the linker.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"
#include "runtime/collective/rendezvous.h"

namespace autodist::collective {

struct CommunicatorOptions {
  int rank = 0;
  int size = 1;
  // Where the ranks meet. Required.
  std::shared_ptr<RendezvousStore> rendezvous;
  // Prefix of this communicator's rendezvous keys: communicators sharing a store need distinct
  // prefixes.
  std::string prefix;
  // The address of this host's interface that the other ranks reach this rank at.
  std::string hostname = "127.0.0.1";
  // How long to wait for the other ranks to show up.
  std::chrono::milliseconds connect_timeout{std::chrono::minutes(2)};
  // Limit on each collective: a peer that stops taking part fails the others within it.
  std::chrono::milliseconds timeout{60000};
  // The GPU a device backend's rank runs on (NCCL); -1: the thread's current one. Host backends
  // ignore it.
  int device = -1;
};

using CommunicatorFactory =
    std::function<std::unique_ptr<Communicator>(const CommunicatorOptions& options)>;

// Adds a backend; a second registration of a name is a programming error (kInternal).
void RegisterCommunicator(const std::string& name, CommunicatorFactory factory);

// Connects this rank through the backend `name`. Throws InvalidArgument naming the backend and
// listing the registered ones when there is none of that name, and InvalidArgument when
// options.rendezvous is missing; the backend's errors otherwise.
std::unique_ptr<Communicator> MakeCommunicator(const std::string& name,
                                               const CommunicatorOptions& options);

// The registered backends' names, sorted.
std::vector<std::string> RegisteredCommunicators();

// Registers a backend at static-initialization time:
//   const CommunicatorRegistrar kRegistrar("gloo", MakeFromOptions);
struct CommunicatorRegistrar {
  CommunicatorRegistrar(const std::string& name, CommunicatorFactory factory) {
    RegisterCommunicator(name, std::move(factory));
  }
};

}  // namespace autodist::collective
