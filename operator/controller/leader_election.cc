#include "operator/controller/leader_election.h"

#include <fmt/chrono.h>
#include <spdlog/spdlog.h>

#include <random>

#include "operator/kube/api_error.h"
#include "runtime/common/error.h"

namespace autodist::controller {
namespace {

// Candidates retry at retry_period · [1, 1.2), client-go's jitter, so they do not race in step.
constexpr double kJitter = 0.2;

std::chrono::milliseconds Jittered(std::chrono::milliseconds base) {
  thread_local std::mt19937 rng{std::random_device{}()};
  const double factor = 1 + std::uniform_real_distribution<double>(0, kJitter)(rng);
  return std::chrono::milliseconds(
      static_cast<long long>(static_cast<double>(base.count()) * factor));
}

long LeaseSeconds(std::chrono::milliseconds d) {
  // The Lease holds whole seconds; round up so the record never claims less than we wait.
  return std::max<long>(1, static_cast<long>((d.count() + 999) / 1000));
}

}  // namespace

std::string FormatMicroTime(std::chrono::system_clock::time_point t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", std::chrono::floor<std::chrono::seconds>(t),
                     micros);
}

LeaderElector::LeaderElector(kube::Client& client, LeaderElectionConfig config,
                             LeaderCallbacks callbacks)
    : client_(client), config_(std::move(config)), callbacks_(std::move(callbacks)) {
  AD_CHECK(!config_.lease_namespace.empty() && !config_.lease_name.empty(), kInvalidArgument,
           "leader election: the lease namespace and name must be set");
  AD_CHECK(!config_.identity.empty(), kInvalidArgument,
           "leader election: the candidate identity must be set");
  AD_CHECK(config_.lease_duration > config_.renew_deadline, kInvalidArgument,
           "leader election: lease duration ({} ms) must exceed the renew deadline ({} ms)",
           config_.lease_duration.count(), config_.renew_deadline.count());
  AD_CHECK(config_.renew_deadline > config_.retry_period, kInvalidArgument,
           "leader election: renew deadline ({} ms) must exceed the retry period ({} ms)",
           config_.renew_deadline.count(), config_.retry_period.count());
}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void LeaderElector::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  cv_.notify_all();
  thread_.join();
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(mutex_);
  return leader_;
}

void LeaderElector::Pause(std::chrono::milliseconds delay, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, stop, delay, [] { return false; });
}

void LeaderElector::Observe(const nlohmann::json& spec) {
  std::string changed_to;
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    if (spec != observed_spec_) {
      observed_spec_ = spec;
      observed_time_ = std::chrono::steady_clock::now();
    }
    const std::string holder = spec.value("holderIdentity", "");
    if (holder != leader_) {
      leader_ = holder;
      changed = !holder.empty();
      changed_to = holder;
    }
  }
  if (changed && callbacks_.on_new_leader) callbacks_.on_new_leader(changed_to);
}

nlohmann::json LeaderElector::Record(const nlohmann::json& previous) const {
  const std::string now = FormatMicroTime(std::chrono::system_clock::now());
  nlohmann::json spec = {{"holderIdentity", config_.identity},
                         {"leaseDurationSeconds", LeaseSeconds(config_.lease_duration)},
                         {"acquireTime", now},
                         {"renewTime", now},
                         {"leaseTransitions", 0}};
  if (previous.is_object()) {
    const int transitions = previous.value("leaseTransitions", 0);
    if (previous.value("holderIdentity", "") == config_.identity) {
      spec["acquireTime"] = previous.value("acquireTime", now);  // a renewal, not a new term
      spec["leaseTransitions"] = transitions;
    } else {
      spec["leaseTransitions"] = transitions + 1;
    }
  }
  return spec;
}

bool LeaderElector::TryAcquireOrRenew() {
  const auto& leases = kube::resources::kLeases;
  nlohmann::json lease;
  try {
    lease = client_.Get(leases, config_.lease_namespace, config_.lease_name);
  } catch (const std::exception& e) {
    if (!kube::IsNotFound(e)) throw;
    const nlohmann::json spec = Record(nullptr);
    const nlohmann::json created = {
        {"apiVersion", leases.ApiVersion()},
        {"kind", leases.kind},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", spec}};
    try {
      client_.Create(leases, config_.lease_namespace, created);
    } catch (const std::exception& race) {
      if (kube::IsAlreadyExists(race) || kube::IsConflict(race)) return false;  // lost the race
      throw;
    }
    Observe(spec);
    return true;
  }
  const nlohmann::json previous = lease.value("spec", nlohmann::json::object());
  Observe(previous);
  const std::string holder = previous.value("holderIdentity", "");
  if (!holder.empty() && holder != config_.identity) {
    std::lock_guard lock(mutex_);
    const auto valid_for = std::chrono::seconds(previous.value("leaseDurationSeconds", 0));
    if (observed_time_ + valid_for > std::chrono::steady_clock::now()) return false;
  }
  lease["spec"] = Record(previous);
  try {
    // Conditional on the resourceVersion we read: a concurrent writer makes this a 409.
    client_.Update(leases, lease);
  } catch (const std::exception& e) {
    if (kube::IsConflict(e)) return false;
    throw;
  }
  Observe(lease["spec"]);
  return true;
}

void LeaderElector::Release() {
  const auto& leases = kube::resources::kLeases;
  try {
    nlohmann::json lease = client_.Get(leases, config_.lease_namespace, config_.lease_name);
    if (lease.value("/spec/holderIdentity"_json_pointer, std::string()) != config_.identity) return;
    // client-go's release: holder cleared, a one-second duration, the transitions kept.
    const std::string now = FormatMicroTime(std::chrono::system_clock::now());
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    lease["spec"]["acquireTime"] = now;
    lease["spec"]["renewTime"] = now;
    client_.Update(leases, lease);
  } catch (const std::exception& e) {
    // The lease then simply expires; a successor waits leaseDurationSeconds longer.
    spdlog::warn("leader election: cannot release lease {}/{}: {}", config_.lease_namespace,
                 config_.lease_name, e.what());
  }
}

void LeaderElector::Run(std::stop_token stop) {
  const auto attempt = [this]() {
    try {
      return TryAcquireOrRenew();
    } catch (const std::exception& e) {
      spdlog::warn("leader election: lease {}/{}: {}", config_.lease_namespace, config_.lease_name,
                   e.what());
      return false;
    }
  };
  // Campaign.
  while (!stop.stop_requested() && !attempt()) Pause(Jittered(config_.retry_period), stop);
  if (stop.stop_requested()) return;
  leading_ = true;
  spdlog::info("leader election: {} now leads with lease {}/{}", config_.identity,
               config_.lease_namespace, config_.lease_name);
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  // Renew.
  auto renewed = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    Pause(config_.retry_period, stop);
    if (stop.stop_requested()) break;
    if (attempt()) {
      renewed = std::chrono::steady_clock::now();
    } else if (std::chrono::steady_clock::now() - renewed >= config_.renew_deadline) {
      leading_ = false;
      lost_ = true;
      spdlog::error("leader election: {} could not renew lease {}/{} within {} ms; stepping down",
                    config_.identity, config_.lease_namespace, config_.lease_name,
                    config_.renew_deadline.count());
      if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
      return;
    }
  }
  if (config_.release_on_stop) Release();
  leading_ = false;
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

}  // namespace autodist::controller
