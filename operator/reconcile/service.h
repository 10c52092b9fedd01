// The job's headless Service <job>: gives every pod the DNS name <pod>.<job>.<namespace>.svc
// (each pod sets hostname and subdomain), published before the pods are ready because members
// must find each other to become ready at all.
#pragma once

#include <nlohmann/json.hpp>

#include "operator/reconcile/job_object.h"
#include "operator/reconcile/members.h"

namespace autodist::reconcile {

nlohmann::json BuildService(const JobRef& ref, const JobMembers& members);

}  // namespace autodist::reconcile
