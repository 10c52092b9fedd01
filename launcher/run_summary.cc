#include "launcher/run_summary.h"

#include <fmt/format.h>

#include "launcher/progress_line.h"
#include "runtime/strategy/summary.h"

namespace autodist::launcher {

std::string FormatRunSummary(const std::string& job_name, double wall_seconds,
                             const std::vector<job::MemberResult>& results,
                             const std::string& log_dir) {
  const job::MemberResult* chief = nullptr;
  for (const job::MemberResult& result : results) {
    if (result.role == "worker" && result.rank == 0) chief = &result;
  }
  std::string out = fmt::format("job {} succeeded in {}", job_name, FormatDuration(wall_seconds));
  if (chief != nullptr) {
    out += fmt::format(": {} steps", chief->steps);
    if (chief->resumed_from_step >= 0) {
      out += fmt::format(" (resumed from step {})", chief->resumed_from_step);
    }
    if (chief->accuracy) out += fmt::format(", test accuracy {:.4f}", *chief->accuracy);
    if (chief->eval_loss) out += fmt::format(", test loss {}", FormatLoss(*chief->eval_loss));
  }
  out += "\n";
  for (const job::MemberResult& result : results) {
    out += fmt::format("  {:<10}", result.node);
    if (result.role == "worker") {
      out += fmt::format("  {} steps  {} samples/s", result.steps,
                         FormatRate(result.samples_per_second));
      if (result.last_loss) out += fmt::format("  last loss {}", FormatLoss(*result.last_loss));
    }
    if (result.all_reduce && result.steps > 0) {
      const job::AllReduceTraffic& ar = *result.all_reduce;
      out += fmt::format("  all-reduce: {}/step on the wire",
                         strategy::FormatBytes(ar.bytes_sent / result.steps));
      if (ar.bytes_sent > 0 && ar.bytes_sent != ar.bytes_reduced) {
        out += fmt::format(" (compression {:.1f}x)", static_cast<double>(ar.bytes_reduced) /
                                                         static_cast<double>(ar.bytes_sent));
      }
    }
    if (result.parameter_server) {
      const job::ParameterServerTraffic& ps = *result.parameter_server;
      out += fmt::format("  parameter server: pushed {}, pulled {}, {} updates",
                         strategy::FormatBytes(ps.bytes_pushed),
                         strategy::FormatBytes(ps.bytes_pulled), ps.updates);
    }
    out += "\n";
  }
  out += fmt::format("logs: {}\n", log_dir);
  return out;
}

}  // namespace autodist::launcher
