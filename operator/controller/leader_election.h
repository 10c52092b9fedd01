// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection package
// does it: candidates read the Lease; one whose holder has not renewed within
// leaseDurationSeconds (timed on the candidate's own clock, from when it last saw the record
// change, so clock skew between nodes does not matter) is taken over with an update conditional
// on the resourceVersion read — of two candidates racing, one gets 409 Conflict and goes on
// waiting. The leader renews every retry_period; if it cannot renew for renew_deadline it stops
// leading. Stop releases the Lease (holder cleared) so a successor need not wait for expiry.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <thread>

#include "operator/kube/client.h"

namespace autodist::controller {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per candidate: the pod name, plus a random suffix
  // The chart's defaults (--lease-duration, --renew-deadline, --retry-period), client-go's too.
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  bool release_on_stop = true;
};

// Called on the elector's thread; they must return quickly (start or stop the controllers, not
// run them), or renewals stall.
struct LeaderCallbacks {
  std::function<void()> on_started_leading;
  // After losing the Lease (it could not be renewed in time) or on Stop while leading. A lost
  // lease is final for this elector, as in controller-runtime, where the process then exits:
  // the controllers it stopped cannot be restarted safely with stale caches and queues.
  std::function<void()> on_stopped_leading;
  // Whenever the observed holder changes (including to this candidate).
  std::function<void(const std::string& identity)> on_new_leader;
};

class LeaderElector {
 public:
  // Throws autodist::Error (kInvalidArgument) for an incomplete config or one where
  // lease_duration <= renew_deadline or renew_deadline <= retry_period.
  LeaderElector(kube::Client& client, LeaderElectionConfig config, LeaderCallbacks callbacks);
  ~LeaderElector();  // stops
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();
  // Stops campaigning or renewing; when leading, releases the Lease (if configured) and calls
  // on_stopped_leading.
  void Stop();

  bool IsLeader() const { return leading_.load(); }
  // True after this elector lost the lease (see LeaderCallbacks::on_stopped_leading).
  bool Lost() const { return lost_.load(); }
  // The holder last seen in the Lease ("" before the first read or after a release).
  std::string leader() const;

 private:
  void Run(std::stop_token stop);
  // One attempt: true when this candidate holds the Lease afterwards.
  bool TryAcquireOrRenew();
  void Release();
  void Observe(const nlohmann::json& spec);
  nlohmann::json Record(const nlohmann::json& previous_spec) const;
  void Pause(std::chrono::milliseconds delay, std::stop_token stop);

  kube::Client& client_;
  LeaderElectionConfig config_;
  LeaderCallbacks callbacks_;

  mutable std::mutex mutex_;
  std::condition_variable_any cv_;
  nlohmann::json observed_spec_;                           // the Lease spec last read
  std::chrono::steady_clock::time_point observed_time_{};  // when it last changed, our clock
  std::string leader_;
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  std::jthread thread_;
};

// metav1.MicroTime's wire format: "2024-05-01T12:00:00.123456Z".
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace autodist::controller
