// `autodist run job.yaml`: the same AutoDistJob manifest `kubectl apply` takes, run on this
// machine as local processes — the chief (worker 0, which hosts the coordinator), the other
// workers and the parameter servers, each an `autodist-runtime --job` member. Shows one live
// progress line, keeps each process's log in the log directory, prints a summary at the end, and
// stops every process when one fails, the deadline passes or the user presses Ctrl-C.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace autodist::cli {

struct RunOptions {
  std::string manifest;
  std::string log_dir;      // default: autodist-logs/<job name> under the current directory
  int port = 0;             // the coordinator's port on 127.0.0.1; 0: a free one
  bool verbose = false;     // also echo every process's output lines
  std::string runtime;      // the autodist-runtime executable; default: next to `autodist`
  int threads = 0;          // compute threads per worker; 0: the cores shared among the workers
  std::string tensorboard;  // TensorBoard event files under DIR/<worker>; empty: the manifest's
  std::string timeline;     // every member's timeline merged into this trace file; empty: none
  int metrics_port = 0;     // members serve /metrics on 127.0.0.1 from this port up; 0: not
  std::chrono::milliseconds heartbeat_timeout{10000};
  std::chrono::milliseconds stop_grace{5000};  // SIGTERM to SIGKILL when stopping processes
  bool live_progress = false;                  // rewrite the progress line in place (a terminal)
  int max_processes = 0;  // members allowed at once; 0: the machine's limit (local_limit.h)
  // Start from step 0: delete the checkpoints in spec.training.checkpoint.path first. Without
  // it, a job whose newest checkpoint already holds its last step is not run again.
  bool fresh = false;
  // Members talk plaintext and accept any peer (autodist-runtime --insecure). By default the
  // run has its own CA and every connection is mutual TLS (run_credentials.h).
  bool insecure = false;
  // Run every member in its own network namespace, on links of this rate (netemu/link_rate.h:
  // "1gbit", "unshaped"); empty: every member on this machine's loopback.
  std::string network;
  double network_latency_ms = 0;  // with network: one-way delay between members (needs netem)
};

// Exit codes: 0 the job succeeded; 1 a process failed (or the deadline passed); 128 + signal
// when interrupted. Throws autodist::Error for a bad manifest, more processes than the machine
// holds (or --max-processes allows), a missing model, a port in use or a missing runtime
// executable, before anything is started; FailedPrecondition when --network cannot build the
// emulated network (not root, no netem for a latency).
int RunJob(const RunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace autodist::cli
