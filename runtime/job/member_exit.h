// Exit codes of a job member process (autodist-runtime), read by whoever watches one: the
// operator's verdict on a failed pod and the launcher's report of a local run.
#pragma once

namespace autodist::job {

inline constexpr int kMemberExitOk = 0;
inline constexpr int kMemberExitFailure = 1;
inline constexpr int kMemberExitBadInput = 2;
inline constexpr int kMemberExitJobFailed = 3;  // another member failed; this one was stopped

}  // namespace autodist::job
