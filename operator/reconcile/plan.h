// What one reconcile decided, for the controller to carry out. The reconciler itself does no I/O
// (beyond reading the model through ModelSource), so the same observed state always gives the
// same plan, and a plan carried out once leaves nothing for the next reconcile to repeat.
//
// The controller executes a plan in this order: write `status` (status subresource; a 409
// conflict means the job changed, so reconcile again from fresh state), delete `deletes`, create
// `creates` (AlreadyExists is success: a lagging cache), delete the job when `delete_job`, emit
// `events`, then requeue after `requeue_after` if set (watch events requeue earlier).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/security/job_credentials.h"

namespace autodist::reconcile {

inline constexpr char kEventNormal[] = "Normal";
inline constexpr char kEventWarning[] = "Warning";

// An Event on the job (involvedObject: the job).
struct Event {
  std::string type;  // kEventNormal | kEventWarning
  std::string reason;
  std::string message;

  bool operator==(const Event&) const = default;
};

// An object to delete, in the job's namespace; `uid` is a precondition, so a newer object of the
// same name is never deleted by mistake.
struct ObjectRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;

  bool operator==(const ObjectRef&) const = default;
};

struct Plan {
  std::optional<nlohmann::json> status;  // the job's new status, only when it changed
  std::vector<ObjectRef> deletes;
  std::vector<nlohmann::json> creates;  // complete objects, in creation order
  bool delete_job = false;              // ttlSecondsAfterFinished ran out
  std::vector<Event> events;
  std::optional<std::chrono::seconds> requeue_after;  // the nearest deadline, TTL or retry
  // Where the running gang's coordinator listens (host:port), while its chief pod runs: the
  // controller polls the job's progress there (progress_poller.h). Not an action.
  std::optional<std::string> coordinator;
  // The operator's certificate of the job (tls_secret.h), to read its coordinator with; nullptr
  // when the job's pods run without TLS.
  std::shared_ptr<const security::JobCredentials> coordinator_credentials;

  // True when the plan changes anything (a requeue alone changes nothing).
  bool HasActions() const;
  // Keeps the earlier of the current hint and `after`.
  void RequeueAfter(std::chrono::seconds after);
};

}  // namespace autodist::reconcile
