#include "operator/reconcile/progress.h"

#include <cmath>

namespace autodist::reconcile {

nlohmann::json ProgressStatus(const Progress& progress, const nlohmann::json& previous,
                              const std::string& now) {
  nlohmann::json values = {{"step", progress.step}};
  if (progress.total_steps.has_value()) values["totalSteps"] = *progress.total_steps;
  if (progress.epoch.has_value()) values["epoch"] = *progress.epoch;
  // JSON has no NaN or infinity; a diverged loss is left out rather than breaking the write.
  if (progress.loss.has_value() && std::isfinite(*progress.loss)) values["loss"] = *progress.loss;
  if (progress.samples_per_second.has_value() && std::isfinite(*progress.samples_per_second)) {
    values["samplesPerSecond"] = *progress.samples_per_second;
  }
  if (previous.is_object()) {
    nlohmann::json previous_values = previous;
    previous_values.erase("lastUpdateTime");
    if (previous_values == values) return previous;
  }
  values["lastUpdateTime"] = now;
  return values;
}

}  // namespace autodist::reconcile
