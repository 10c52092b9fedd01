// The credentials of this process's member of a job, set once at start (autodist-runtime's
// --tls-dir, the launcher's own) and used by every server and client the process makes unless
// it is given others (the operator talks to many jobs, each with its own). Unset: plaintext,
// which only tests and an explicit --insecure choose.
#pragma once

#include <memory>

#include "runtime/security/job_credentials.h"

namespace autodist::security {

void SetProcessCredentials(std::shared_ptr<const JobCredentials> credentials);
// nullptr until set.
std::shared_ptr<const JobCredentials> ProcessCredentials();

}  // namespace autodist::security
