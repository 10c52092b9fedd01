// Gloo's rendezvous store interface over any RendezvousStore (rendezvous.h), so that a Gloo
// communicator meets its peers wherever the job's other collectives do: in a job the
// coordinator's store. Pass it as GlooOptions::store (communicator.h).
#pragma once

#include <chrono>
#include <memory>

#include "runtime/collective/rendezvous.h"

namespace gloo::rendezvous {
class Store;
}

namespace autodist::collective {

// Gloo's get() of a key not set yet waits up to `get_wait` (its wait() brings its own timeout).
// The store's failures surface as autodist::Error. Throws InvalidArgument for a null store.
std::shared_ptr<gloo::rendezvous::Store> MakeGlooStore(
    std::shared_ptr<RendezvousStore> store,
    std::chrono::milliseconds get_wait = std::chrono::milliseconds(60000));

}  // namespace autodist::collective
