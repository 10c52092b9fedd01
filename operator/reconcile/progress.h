// Training progress as the coordinator reports it to the controller, and its status.progress.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace autodist::reconcile {

// Filled by the controller from the coordinator of the job's chief.
struct Progress {
  int64_t step = 0;
  std::optional<int64_t> total_steps;
  std::optional<int64_t> epoch;
  std::optional<double> loss;
  std::optional<double> samples_per_second;
  // The checkpoint step the current pods resumed from (after a gang restart or a resume).
  std::optional<int64_t> resumed_from_step;

  bool operator==(const Progress&) const = default;
};

// status.progress for `progress`. lastUpdateTime is `now` only when a reported value changed
// since `previous`; otherwise `previous` comes back unchanged, so reporting the same progress
// twice writes no status.
nlohmann::json ProgressStatus(const Progress& progress, const nlohmann::json& previous,
                              const std::string& now);

}  // namespace autodist::reconcile
