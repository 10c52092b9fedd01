// Libraries that write to sockets with plain send(2) or write(2) (Gloo's pairs, OpenSSL's socket
// BIO) raise SIGPIPE when the peer has gone, which would kill the process instead of failing the
// write. IgnoreSigpipe turns the signal into EPIPE, which they report as an error.
#pragma once

namespace autodist {

// Ignores SIGPIPE from now on, unless the program installed a handler of its own (only the
// default action is replaced). Idempotent and thread-safe.
void IgnoreSigpipe();

}  // namespace autodist
