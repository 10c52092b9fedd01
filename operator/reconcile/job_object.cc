#include "operator/reconcile/job_object.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "operator/reconcile/members.h"
#include "operator/reconcile/names.h"
#include "runtime/common/error.h"
#include "runtime/job/job_parser.h"

namespace autodist::reconcile {
namespace {

constexpr size_t kMaxHostname = 63;
// The restart whose pod names are checked when the run policy sets no backoffLimit: a job that
// restarts more often gets longer names, which the API server refuses once they pass 63
// characters (the job then fails FailedCreate, quoting it).
constexpr int kCheckedRestartsWithoutLimit = 999;

std::string StringField(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "<source>:<line>: rest" or "<source>: rest" -> "rest".
std::string WithoutSource(const std::string& message, const std::string& source) {
  if (message.rfind(source, 0) != 0) return message;
  size_t at = source.size();
  if (at < message.size() && message[at] == ':') {
    size_t digits = at + 1;
    while (digits < message.size() && std::isdigit(static_cast<unsigned char>(message[digits]))) {
      ++digits;
    }
    if (digits > at + 1 && digits < message.size() && message[digits] == ':') at = digits;
  }
  if (message.compare(at, 2, ": ") != 0) return message;
  return message.substr(at + 2);
}

// A pod's hostname is its name, and a hostname is a DNS label of at most 63 characters: that
// of the last gang restart the run policy allows too (names.h: PodName).
void CheckPodNames(const job::JobSpec& job) {
  const int last_restart =
      std::max(0, job.run_policy.backoff_limit.value_or(kCheckedRestartsWithoutLimit));
  const auto check = [&](Role role, int count) {
    if (count == 0) return;
    const std::string longest = PodName(job.metadata.name, role, count - 1, last_restart);
    AD_CHECK(longest.size() <= kMaxHostname, kInvalidArgument,
             "metadata.name: \"{}\" is too long for its pods: pod {} (restart {}) would have {} "
             "characters, more than a hostname's {}",
             job.metadata.name, longest, last_restart, longest.size(), kMaxHostname);
  };
  check(Role::kWorker, job.resources.workers);
  check(Role::kParameterServer, job.resources.parameter_servers);
}

}  // namespace

JobRef ReadJobRef(const nlohmann::json& object) {
  AD_CHECK(object.is_object(), kInvalidArgument, "AutoDistJob: expected a JSON object");
  const auto metadata = object.find("metadata");
  AD_CHECK(metadata != object.end() && metadata->is_object(), kInvalidArgument,
           "AutoDistJob: the object has no metadata");
  JobRef ref;
  ref.name = StringField(*metadata, "name");
  AD_CHECK(!ref.name.empty(), kInvalidArgument, "AutoDistJob: the object has no metadata.name");
  ref.namespace_name = StringField(*metadata, "namespace");
  if (ref.namespace_name.empty()) ref.namespace_name = "default";
  ref.uid = StringField(*metadata, "uid");
  const auto generation = metadata->find("generation");
  if (generation != metadata->end() && generation->is_number_integer()) {
    ref.generation = generation->get<int64_t>();
  }
  const auto deletion = metadata->find("deletionTimestamp");
  ref.deleting = deletion != metadata->end() && !deletion->is_null();
  return ref;
}

job::JobSpec ParseJobObject(const nlohmann::json& object, const ReconcilerOptions& options) {
  const JobRef ref = ReadJobRef(object);
  const std::string source = fmt::format("AutoDistJob {}/{}", ref.namespace_name, ref.name);
  try {
    // The shared parser reads the object as the API server returned it; its messages start
    // with `source`, which is removed below.
    job::JobSpec job = job::ParseJobJson(object, source, options.working_dir);
    CheckPodNames(job);
    ListMembers(job.metadata.name, ref.namespace_name, job.resources.workers,
                job.resources.parameter_servers, options.addresses);  // port slot check
    return job;
  } catch (const Error& error) {
    throw Error(error.code(), WithoutSource(error.what(), source));
  }
}

}  // namespace autodist::reconcile
