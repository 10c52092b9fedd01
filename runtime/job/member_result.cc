#include "runtime/job/member_result.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::job {
namespace {

using nlohmann::json;

template <typename T>
void PutOptional(json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = *value;
}

template <typename T>
std::optional<T> GetOptional(const json& in, const char* key) {
  if (!in.contains(key) || in.at(key).is_null()) return std::nullopt;
  return in.at(key).get<T>();
}

}  // namespace

std::string MemberResultToJson(const MemberResult& result) {
  json out;
  out["node"] = result.node;
  out["role"] = result.role;
  out["rank"] = result.rank;
  out["steps"] = result.steps;
  out["seconds"] = result.seconds;
  out["samplesPerSecond"] = result.samples_per_second;
  PutOptional(out, "lastLoss", result.last_loss);
  PutOptional(out, "evalLoss", result.eval_loss);
  PutOptional(out, "accuracy", result.accuracy);
  out["resumedFromStep"] = result.resumed_from_step;
  if (result.parameter_server) {
    out["parameterServer"] = {{"bytesPushed", result.parameter_server->bytes_pushed},
                              {"bytesPulled", result.parameter_server->bytes_pulled},
                              {"updates", result.parameter_server->updates}};
  }
  if (result.all_reduce) {
    out["allReduce"] = {{"bytesReduced", result.all_reduce->bytes_reduced},
                        {"bytesSent", result.all_reduce->bytes_sent}};
  }
  if (!result.strategy_summary.empty()) out["strategySummary"] = result.strategy_summary;
  return out.dump(2) + "\n";
}

MemberResult MemberResultFromJson(const std::string& text, const std::string& source) {
  try {
    const json in = json::parse(text);
    MemberResult result;
    result.node = in.at("node").get<std::string>();
    result.role = in.at("role").get<std::string>();
    result.rank = in.at("rank").get<int>();
    result.steps = in.at("steps").get<int64_t>();
    result.seconds = in.at("seconds").get<double>();
    result.samples_per_second = in.at("samplesPerSecond").get<double>();
    result.last_loss = GetOptional<double>(in, "lastLoss");
    result.eval_loss = GetOptional<double>(in, "evalLoss");
    result.accuracy = GetOptional<double>(in, "accuracy");
    result.resumed_from_step = in.value("resumedFromStep", int64_t{-1});
    if (in.contains("parameterServer")) {
      const json& ps = in.at("parameterServer");
      result.parameter_server = ParameterServerTraffic{ps.at("bytesPushed").get<int64_t>(),
                                                       ps.at("bytesPulled").get<int64_t>(),
                                                       ps.at("updates").get<int64_t>()};
    }
    if (in.contains("allReduce")) {
      const json& ar = in.at("allReduce");
      result.all_reduce =
          AllReduceTraffic{ar.at("bytesReduced").get<int64_t>(), ar.at("bytesSent").get<int64_t>()};
    }
    result.strategy_summary = in.value("strategySummary", std::string());
    return result;
  } catch (const json::exception& error) {
    Fail(ErrorCode::kInvalidArgument, "result file '{}' is not a process result: {}", source,
         error.what());
  }
}

void WriteMemberResult(const std::string& path, const MemberResult& result) {
  const std::string temporary = path + ".tmp";
  WriteFileBytes(temporary, MemberResultToJson(result));
  AD_CHECK(std::rename(temporary.c_str(), path.c_str()) == 0, kFailedPrecondition,
           "cannot move result file '{}' into place at '{}'", temporary, path);
}

MemberResult ReadMemberResult(const std::string& path) {
  return MemberResultFromJson(ReadFileBytes(path, "result file"), path);
}

}  // namespace autodist::job
