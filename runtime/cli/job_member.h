// One process of a distributed job, as `autodist run` (or a pod) starts it:
//   autodist-runtime --job job.yaml --node worker-1 --coordinator 10.0.0.5:7070
// Every process reads the same manifest. The chief (worker 0) compiles the Strategy and hosts the
// coordinator on the coordinator address; every process hosts a parameter-server service; workers
// train under the Strategy, parameter-server nodes serve until every worker has finished.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "runtime/job/job_spec.h"

namespace autodist::cli {

struct MemberOptions {
  std::string job_file;                // the AutoDistJob manifest
  std::string node;                    // this process's node: "worker-0", "ps-1"
  std::string coordinator;             // host:port where the chief serves the coordinator
  std::string listen = "127.0.0.1:0";  // where the other members serve (port 0: any free port)
  std::string advertise_host;          // host others reach this member at; empty: listen's host
  std::string job_id;                  // empty: the manifest's metadata.name
  std::string result_file;             // write this member's result (JSON) here at the end
  int threads = 0;                     // compute threads; 0: all cores
  std::string tensorboard_dir;         // instead of spec.training.tensorboard.path; empty: that
  std::string timeline_path;           // this member's timeline (observe/timeline.h); empty: the
                                       // manifest's spec.training.timeline.path, or none
  bool ps_data_channel = true;         // serve PS Steps on the data channel too (ps_data_channel.h)
  // This member's credentials (security/job_credentials.h: ca.crt, tls.crt, tls.key): every
  // connection of the job is mutual TLS with them. Required unless `insecure`.
  std::string tls_dir;
  bool insecure = false;  // plaintext, unauthenticated: chosen explicitly, never by default
  // Each link's rate where the manifest has no spec.resources.networkBandwidthGbps (`autodist
  // run --network`: the emulated links), for Auto's cost model.
  std::optional<double> network_bandwidth_gbps;
  // Continue from the latest checkpoint even when the manifest's checkpoint.resume is false
  // (which only keeps a first start from picking up older checkpoints): the operator starts the
  // pods of a gang restart or a resume with it. Needs spec.training.checkpoint.
  bool resume = false;
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds heartbeat_timeout{10000};  // a member silent this long fails the job
  std::chrono::milliseconds rendezvous_timeout{std::chrono::minutes(2)};
};

// The manifest of options.job_file, with options.resume applied. Throws autodist::Error
// (kInvalidArgument) for a manifest that does not parse, or --resume without a checkpoint.
job::JobSpec LoadMemberJob(const MemberOptions& options);

// Runs the member to the end; returns its exit code: job::kMemberExitOk, or
// job::kMemberExitJobFailed when its training broke off because another member had failed (the
// cause, printed as "stopped: <member> failed: ..."). Throws autodist::Error on bad input or this
// member's own failure (after telling the coordinator, when it was reached). A job failure seen
// through the heartbeat ends the process with job::kMemberExitJobFailed
// (runtime/job/member_exit.h).
int RunMember(const MemberOptions& options);

}  // namespace autodist::cli
