// A network namespace that lives exactly as long as the process that made it.
//
// A small holder process unshares a new network namespace and waits. It dies with its creator:
// when the creator exits in any way, SIGKILL included, the holder's pipe reaches end-of-file and
// PR_SET_PDEATHSIG kills it as well. The namespace has no name under /run/netns, so once its last
// process is gone the kernel removes it, and with it every veth end, bridge and qdisc inside
// (deleting one end of a veth pair deletes the other). Nothing needs cleaning up by hand, which
// is what makes a killed harness leave nothing behind.
//
// PR_SET_PDEATHSIG fires when the creating thread ends: create namespaces on a thread that
// outlives them (the main thread, in the launcher and in the tests).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace autodist::netemu {

class NetworkNamespace {
 public:
  // Starts the holder. Throws FailedPrecondition when the namespace cannot be created (not
  // root: unshare needs CAP_SYS_ADMIN), Unavailable when fork or pipes fail.
  explicit NetworkNamespace(std::string name);
  ~NetworkNamespace();  // stops the holder and reaps it
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;

  const std::string& name() const { return name_; }
  pid_t holder() const { return holder_; }
  // An open descriptor of the namespace (close-on-exec), for setns(2).
  int fd() const { return fd_; }
  // /proc/<holder>/ns/net: what `nsenter --net=` and `ip link set ... netns` take.
  std::string path() const;

 private:
  std::string name_;
  pid_t holder_ = 0;
  int fd_ = -1;
  int keep_alive_ = -1;  // write end of the holder's pipe
};

// Runs argv[0] (looked up in PATH, then /usr/sbin and /sbin) inside the namespace `fd` (-1: the
// caller's own) and waits for it. Throws FailedPrecondition with the command line and what it
// printed when it fails, NotFound when the program is missing.
void RunInNamespace(int fd, const std::vector<std::string>& argv);

// Where `program` is: a PATH entry, then /usr/sbin, then /sbin; empty when none has it.
std::string FindProgram(const std::string& program);

}  // namespace autodist::netemu
