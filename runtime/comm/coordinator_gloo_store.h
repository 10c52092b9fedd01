// A Gloo rendezvous store kept by the job's coordinator (StoreSet/StoreGet,
// docs/coordinator.md), so that collectives need no service besides the coordinator every
// process already talks to. Pass it as GlooOptions::store (gloo_communicator.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace gloo::rendezvous {
class Store;
}

namespace autodist::comm {

class CoordinatorClient;

// A store speaking for `node`, a registered worker. Gloo's get() of a key not set yet waits up
// to `get_wait` (its wait() brings its own timeout). The coordinator's failures surface as
// autodist::Error (kUnavailable naming the missing keys when a wait passes, kFailedPrecondition
// when the job failed).
std::shared_ptr<gloo::rendezvous::Store> MakeCoordinatorGlooStore(
    std::shared_ptr<CoordinatorClient> client, std::string node,
    std::chrono::milliseconds get_wait = std::chrono::milliseconds(60000));

}  // namespace autodist::comm
