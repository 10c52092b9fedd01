#include "runtime/strategy/step_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <ranges>
#include <set>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::strategy {
namespace {

constexpr int kProfileVersion = 1;
// FLOPs per dense parameter and sample of a training step: forward 2, backward 4.
constexpr double kFlopsPerParameterAndSample = 6;
constexpr double kCpuWorkerFlops = 50e9;   // one CPU worker process (a few cores, BLAS)
constexpr double kGpuWorkerFlops = 20e12;  // per GPU replica
constexpr double kUpdateSecondsPerParameter = 2e-9;
// Fixed costs measured on the development machine (docs/strategies.md, "Cost model").
constexpr double kCollectiveSeconds = 100e-6;  // a 4 KiB all-reduce, 2 ranks, loopback
constexpr double kPsRoundSeconds = 250e-6;     // a small data-channel Step round
constexpr double kFp16SecondsPerElement = 1.0e-9;
constexpr double kFp16EfSecondsPerElement = 2.0e-9;
constexpr double kPowerSgdSecondsPerElement = 4.0e-9;  // rank 1: two passes over M, plus e
constexpr double kTopKSecondsPerElement = 6.0e-9;      // selection, residual and scatter

using nlohmann::json;

double RequireTime(const json& object, const char* key, const std::string& source) {
  AD_CHECK(object.contains(key) && object.at(key).is_number(), kInvalidArgument,
           "{}: field '{}' is missing or not a number", source, key);
  const double value = object.at(key).get<double>();
  AD_CHECK(std::isfinite(value) && value >= 0, kInvalidArgument,
           "{}: field '{}' is {}: expected seconds >= 0", source, key, value);
  return value;
}

// A share in (0, 1] (an efficiency).
double RequireShare(const json& object, const char* key, const std::string& source) {
  const json& value = object.at(key);
  AD_CHECK(value.is_number() && value.get<double>() > 0 && value.get<double>() <= 1,
           kInvalidArgument, "{}: field '{}' must be a number in (0, 1], got {}", source, key,
           value.dump());
  return value.get<double>();
}

std::map<std::string, double> RequireMap(const json& object, const char* key,
                                         const std::string& source, double maximum) {
  std::map<std::string, double> values;
  if (!object.contains(key)) return values;
  AD_CHECK(object.at(key).is_object(), kInvalidArgument, "{}: field '{}' must be an object", source,
           key);
  for (const auto& [name, value] : object.at(key).items()) {
    AD_CHECK(value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() >= 0 &&
                 value.get<double>() <= maximum,
             kInvalidArgument, "{}: {}['{}'] is {}: expected a number in [0, {}]", source, key,
             name, value.dump(), maximum);
    values[name] = value.get<double>();
  }
  return values;
}

}  // namespace

StepProfile DefaultRuntimeCosts() {
  StepProfile costs;
  costs.collective_seconds = kCollectiveSeconds;
  costs.ps_round_seconds = kPsRoundSeconds;
  costs.compress_seconds_per_element = {{"HorovodCompressor", kFp16SecondsPerElement},
                                        {"HorovodCompressorEF", kFp16EfSecondsPerElement},
                                        {"PowerSGDCompressor", kPowerSgdSecondsPerElement},
                                        {"TopKCompressorEF", kTopKSecondsPerElement}};
  return costs;
}

StepProfile EstimateStepProfile(const std::vector<graph::Variable>& variables,
                                int64_t batch_per_replica, int replicas_per_worker,
                                bool gpu_workers) {
  StepProfile profile = DefaultRuntimeCosts();
  profile.source = "estimated";
  profile.batch_per_replica = batch_per_replica;
  profile.replicas_per_worker = replicas_per_worker;
  double dense_parameters = 0;
  double parameters = 0;
  for (const graph::Variable& variable : variables) {
    const auto elements = static_cast<double>(graph::NumElements(variable.shape));
    parameters += elements;
    if (!variable.sparse) dense_parameters += elements;
  }
  const double samples = static_cast<double>(batch_per_replica) * replicas_per_worker;
  const double flops = kFlopsPerParameterAndSample * dense_parameters * samples;
  const double rate = gpu_workers ? kGpuWorkerFlops * replicas_per_worker : kCpuWorkerFlops;
  profile.forward_seconds = flops / rate / 3;
  profile.backward_seconds = 2 * flops / rate / 3;
  profile.update_seconds = parameters * kUpdateSecondsPerParameter;
  // Backward visits the model from its end: variable i is final once every parameter from i on
  // has had its gradient.
  double behind = 0;
  for (size_t i = variables.size(); i-- > 0;) {
    const graph::Variable& variable = variables[i];
    behind += static_cast<double>(graph::NumElements(variable.shape));
    profile.ready_fraction[variable.name] = parameters == 0 ? 1.0 : behind / parameters;
    if (variable.sparse) {
      const double rows = variable.shape.empty() ? 1 : static_cast<double>(variable.shape[0]);
      profile.sparse_rows[variable.name] = std::min(rows, static_cast<double>(batch_per_replica));
    }
  }
  return profile;
}

std::string StepProfileToJson(const StepProfile& profile) {
  json out = {{"version", kProfileVersion},
              {"source", profile.source},
              {"batchPerReplica", profile.batch_per_replica},
              {"replicasPerWorker", profile.replicas_per_worker},
              {"forwardSeconds", profile.forward_seconds},
              {"backwardSeconds", profile.backward_seconds},
              {"updateSeconds", profile.update_seconds},
              {"gradientReadyFraction", profile.ready_fraction},
              {"sparseRowsPerReplica", profile.sparse_rows},
              {"collectiveSeconds", profile.collective_seconds},
              {"parameterServerRoundSeconds", profile.ps_round_seconds},
              {"compressSecondsPerElement", profile.compress_seconds_per_element},
              {"loopbackGbps", profile.loopback_gbps},
              {"allReduceOverheadSeconds", profile.all_reduce_overhead_seconds},
              {"duplexEfficiency", profile.duplex_efficiency},
              {"overlapEfficiency", profile.overlap_efficiency},
              {"parameterServerWireShare", profile.ps_wire_share}};
  return out.dump(2) + "\n";
}

StepProfile StepProfileFromJson(const std::string& text, const std::string& source) {
  json in;
  try {
    in = json::parse(text);
  } catch (const json::exception& error) {
    Fail(ErrorCode::kInvalidArgument, "{}: not a step profile (JSON): {}", source, error.what());
  }
  AD_CHECK(in.is_object(), kInvalidArgument, "{}: a step profile is a JSON object", source);
  AD_CHECK(in.contains("version") && in.at("version") == kProfileVersion, kInvalidArgument,
           "{}: step profile version {} is not supported (expected {}); write it again with "
           "`autodist profile`",
           source, in.contains("version") ? in.at("version").dump() : "missing", kProfileVersion);
  StepProfile profile;
  profile.source = in.value("source", std::string("measured"));
  AD_CHECK(in.contains("batchPerReplica") && in.at("batchPerReplica").is_number_integer() &&
               in.at("batchPerReplica").get<int64_t>() > 0,
           kInvalidArgument, "{}: field 'batchPerReplica' must be a positive integer", source);
  profile.batch_per_replica = in.at("batchPerReplica").get<int64_t>();
  AD_CHECK(in.contains("replicasPerWorker") && in.at("replicasPerWorker").is_number_integer() &&
               in.at("replicasPerWorker").get<int>() > 0,
           kInvalidArgument, "{}: field 'replicasPerWorker' must be a positive integer", source);
  profile.replicas_per_worker = in.at("replicasPerWorker").get<int>();
  profile.forward_seconds = RequireTime(in, "forwardSeconds", source);
  profile.backward_seconds = RequireTime(in, "backwardSeconds", source);
  profile.update_seconds = RequireTime(in, "updateSeconds", source);
  profile.collective_seconds = RequireTime(in, "collectiveSeconds", source);
  profile.ps_round_seconds = RequireTime(in, "parameterServerRoundSeconds", source);
  profile.ready_fraction = RequireMap(in, "gradientReadyFraction", source, 1.0);
  profile.sparse_rows = RequireMap(in, "sparseRowsPerReplica", source, 1e18);
  profile.compress_seconds_per_element = RequireMap(in, "compressSecondsPerElement", source, 1.0);
  if (in.contains("loopbackGbps")) profile.loopback_gbps = RequireTime(in, "loopbackGbps", source);
  if (in.contains("allReduceOverheadSeconds")) {
    profile.all_reduce_overhead_seconds = RequireTime(in, "allReduceOverheadSeconds", source);
  } else if (in.contains("stepOverheadSeconds")) {
    // A profile written while every step paid it: its parameter-server round was calibrated
    // beside it, so the round gets it too and a parameter-server step is predicted as before.
    const double overhead = RequireTime(in, "stepOverheadSeconds", source);
    profile.all_reduce_overhead_seconds = overhead;
    profile.ps_round_seconds += overhead;
  }
  if (in.contains("duplexEfficiency")) {
    profile.duplex_efficiency = RequireShare(in, "duplexEfficiency", source);
  }
  if (in.contains("overlapEfficiency")) {
    profile.overlap_efficiency = RequireShare(in, "overlapEfficiency", source);
  }
  if (in.contains("parameterServerWireShare")) {
    profile.ps_wire_share = RequireShare(in, "parameterServerWireShare", source);
  }
  return profile;
}

StepProfile ReadStepProfile(const std::string& path) {
  return StepProfileFromJson(ReadFileBytes(path, "step profile"), path);
}

void CheckProfileMatches(const StepProfile& profile, const std::vector<graph::Variable>& variables,
                         int64_t batch_per_replica, int replicas_per_worker,
                         const std::string& source) {
  std::set<std::string> names;
  for (const graph::Variable& variable : variables) {
    names.insert(variable.name);
    AD_CHECK(profile.ready_fraction.contains(variable.name), kInvalidArgument,
             "{}: the profile has no gradient time for variable '{}': it was measured on another "
             "model; run `autodist profile` on this one",
             source, variable.name);
    AD_CHECK(!variable.sparse || profile.sparse_rows.contains(variable.name), kInvalidArgument,
             "{}: the profile has no row count for sparse variable '{}': it was measured on "
             "another model; run `autodist profile` on this one",
             source, variable.name);
  }
  for (const auto& [name, fraction] : profile.ready_fraction) {
    AD_CHECK(names.contains(name), kInvalidArgument,
             "{}: the profile names variable '{}', which the model does not have: it was "
             "measured on another model; run `autodist profile` on this one",
             source, name);
  }
  AD_CHECK(batch_per_replica == 0 || profile.batch_per_replica == batch_per_replica,
           kInvalidArgument,
           "{}: the profile was measured at {} samples per replica, the job has {}; run "
           "`autodist profile` with the job's batch",
           source, profile.batch_per_replica, batch_per_replica);
  AD_CHECK(replicas_per_worker == 0 || profile.replicas_per_worker == replicas_per_worker,
           kInvalidArgument,
           "{}: the profile was measured with {} replicas per worker, the job has {}; run "
           "`autodist profile` on the job",
           source, profile.replicas_per_worker, replicas_per_worker);
}

}  // namespace autodist::strategy
