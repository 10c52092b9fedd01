// The job's coordinator as the rendezvous of its collectives (collective/rendezvous.h): keys and
// values go through the coordinator's key-value store (StoreSet/StoreGet, docs/coordinator.md).
#pragma once

#include <memory>
#include <string>

#include "runtime/collective/rendezvous.h"
#include "runtime/coordinator/client.h"

namespace autodist::coordinator {

// A store speaking for `node`, a registered worker. The coordinator's failures surface as
// autodist::Error (kUnavailable naming the missing keys when a wait passes, kFailedPrecondition
// when the job failed). Throws InvalidArgument for a null client.
std::shared_ptr<collective::RendezvousStore> MakeCoordinatorRendezvous(
    std::shared_ptr<CoordinatorClient> client, std::string node);

}  // namespace autodist::coordinator
