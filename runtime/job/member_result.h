// What each process of a job reports when it ends: a small JSON file the runtime writes and the
// launcher (`autodist run`) reads for its final summary. Kept apart from the coordinator because
// the chief, which hosts the coordinator, is gone by the time the summary is printed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace autodist::job {

struct ParameterServerTraffic {
  int64_t bytes_pushed = 0;  // gradient bytes the server received
  int64_t bytes_pulled = 0;  // value bytes it sent
  int64_t updates = 0;       // updates applied (summed over hosted tensors' versions)

  bool operator==(const ParameterServerTraffic&) const = default;
};

struct AllReduceTraffic {
  int64_t bytes_reduced = 0;  // float32 bytes of the gradients all-reduced
  int64_t bytes_sent = 0;     // what this worker contributed on the wire for them

  bool operator==(const AllReduceTraffic&) const = default;
};

struct MemberResult {
  std::string node;
  std::string role;  // "worker" | "ps"
  int rank = 0;
  int64_t steps = 0;
  double seconds = 0;
  double samples_per_second = 0;
  std::optional<double> last_loss;
  std::optional<double> eval_loss;
  std::optional<double> accuracy;
  int64_t resumed_from_step = -1;
  std::optional<ParameterServerTraffic> parameter_server;  // when the process hosted one
  std::optional<AllReduceTraffic> all_reduce;              // when the worker all-reduced
  // The chief's: the compiled Strategy's summary (strategy/summary.h), for the run's report.
  std::string strategy_summary;

  bool operator==(const MemberResult&) const = default;
};

std::string MemberResultToJson(const MemberResult& result);
// Throws InvalidArgument naming `source` when the text is not such a result.
MemberResult MemberResultFromJson(const std::string& text, const std::string& source);

// Writes atomically (a temporary file renamed into place), so a reader never sees half a file.
void WriteMemberResult(const std::string& path, const MemberResult& result);
MemberResult ReadMemberResult(const std::string& path);

}  // namespace autodist::job
