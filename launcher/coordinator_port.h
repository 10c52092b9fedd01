// The port of the coordinator of a local `autodist run`, chosen before the chief binds it. A
// port the kernel handed out for bind(0) comes from the ephemeral range, which every outgoing
// connection on the machine draws its source port from too: between the check and the chief's
// bind, one of them could take it (seen once in CI, with many tests connecting at once). So the
// port is drawn at random below that range, where the kernel never assigns one by itself.
#pragma once

#include <string>

namespace autodist::launcher {

// The first port of the ephemeral range, as `range_file` (the kernel's
// ip_local_port_range) says; 32768 (Linux's default) when it cannot be read.
int EphemeralRangeStart(const std::string& range_file = "/proc/sys/net/ipv4/ip_local_port_range");

// Whether 127.0.0.1:`port` can be bound now (the socket is closed again).
bool LoopbackPortFree(int port);

// `requested` when it is not 0 (Unavailable, naming it and --port, when it is in use); else a
// free port drawn at random from [10000, `ephemeral_start`), or from bind(0) when that range is
// too small or nothing in it is free after a few draws.
int ChooseCoordinatorPort(int requested, int ephemeral_start = EphemeralRangeStart());

}  // namespace autodist::launcher
