// The job's Secret <job>-tls: its own certificate authority and a certificate and key for every
// member and for the operator (runtime/security). Owned by the job, so it goes with it. Each pod
// mounts only the CA certificate and its own member's pair (TlsVolume), as the runtime's
// --tls-dir expects them (ca.crt, tls.crt, tls.key); the operator reads its own pair back from the
// Secret to read the job's progress. docs/security.md.
//
// Building the Secret is the one part of a reconcile that is not a function of what it observed:
// keys are random. It is built only when the Secret does not exist, so a job's keys never change
// under its running pods.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "operator/reconcile/job_object.h"
#include "operator/reconcile/members.h"
#include "operator/reconcile/options.h"
#include "runtime/security/job_credentials.h"

namespace autodist::reconcile {

// The operator's member name in every job's CA.
inline constexpr char kOperatorMember[] = "operator";
inline constexpr char kTlsVolume[] = "autodist-tls";

// A new CA for the job and credentials for each of `members` and for the operator.
nlohmann::json BuildTlsSecret(const JobRef& ref, const JobMembers& members,
                              const JobTlsOptions& options);

// The operator's credentials in `secret`; nullopt when it holds none that check out (the reason is
// not the job's problem: its pods check their own).
std::shared_ptr<const security::JobCredentials> OperatorCredentials(const nlohmann::json& secret);

// What the operator's cache keeps of the Secret (an informer's transform): its metadata, the CA
// certificate and the operator's pair, and only the names of the other keys: not the members'
// private keys or the CA's.
nlohmann::json SlimTlsSecret(const nlohmann::json& secret);

// The pod's volume of the Secret, with the CA and `member`'s pair only, and where it is mounted.
nlohmann::json TlsVolume(const JobRef& ref, const Member& member);
std::string TlsMountPath(const JobTlsOptions& options, const Member& member);

}  // namespace autodist::reconcile
