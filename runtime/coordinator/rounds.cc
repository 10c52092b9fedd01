#include "runtime/coordinator/rounds.h"

#include <algorithm>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::coordinator {
namespace {

using autodist::proto::StateReduction;
using tensor::DType;
using tensor::Tensor;

const char* ReductionName(StateReduction reduction) {
  return reduction == autodist::proto::STATE_REDUCTION_SUM ? "Sum" : "Mean";
}

StateReduction ReductionOf(const ReduceSubmission& submission, const std::string& name) {
  const auto it = submission.reductions.find(name);
  return it == submission.reductions.end() ? autodist::proto::STATE_REDUCTION_MEAN : it->second;
}

}  // namespace

ReduceRounds::ReduceRounds(std::vector<std::string> workers) : workers_(std::move(workers)) {}

void ReduceRounds::Submit(const std::string& round, int rank, ReduceSubmission submission) {
  const std::string& worker = workers_.at(static_cast<size_t>(rank));
  AD_CHECK(!round.empty(), kInvalidArgument, "ReduceStates: worker '{}' named no round", worker);
  AD_CHECK(submission.replicas >= 1, kInvalidArgument,
           "ReduceStates round '{}': worker '{}' says its sums cover {} replicas; expected at "
           "least 1",
           round, worker, submission.replicas);
  for (const auto& [name, value] : submission.sums) {
    AD_CHECK(value.dtype() == DType::kFloat32, kInvalidArgument,
             "ReduceStates round '{}': worker '{}' sent tensor '{}' as {}; only float32 state "
             "is reduced",
             round, worker, name, tensor::DTypeName(value.dtype()));
  }
  for (const auto& [name, reduction] : submission.reductions) {
    AD_CHECK(submission.sums.count(name) > 0, kInvalidArgument,
             "ReduceStates round '{}': worker '{}' gave a reduction for tensor '{}' but did not "
             "send it",
             round, worker, name);
    AD_CHECK(reduction == autodist::proto::STATE_REDUCTION_MEAN ||
                 reduction == autodist::proto::STATE_REDUCTION_SUM,
             kInvalidArgument,
             "ReduceStates round '{}': worker '{}' asks for reduction {} of tensor '{}'; "
             "expected Mean (0) or Sum (1)",
             round, worker, static_cast<int>(reduction), name);
  }
  AD_CHECK(reduced_.count(round) == 0, kFailedPrecondition,
           "ReduceStates: worker '{}' submitted round '{}', which was reduced already; every "
           "round needs a name of its own (e.g. with the step in it)",
           worker, round);

  Round& state = rounds_[round];
  if (state.failure) {
    Fail(ErrorCode::kFailedPrecondition, "ReduceStates round '{}' failed: {}", round,
         *state.failure);
  }
  AD_CHECK(state.submitted.count(rank) == 0 && state.result == nullptr, kFailedPrecondition,
           "ReduceStates round '{}': worker '{}' submitted this round twice", round, worker);
  try {
    CheckMatches(round, state, rank, submission);
  } catch (const Error& error) {
    // The round can never complete now: everyone waiting for it is told why.
    state.failure = error.what();
    state.submitted.clear();
    throw;
  }
  state.submitted.emplace(rank, std::move(submission));
  if (state.submitted.size() < workers_.size()) return;
  state.result = std::make_shared<const TensorMap>(Reduce(state));
  state.submitted.clear();
  state.collected.assign(workers_.size(), false);
}

void ReduceRounds::CheckMatches(const std::string& round, const Round& state, int rank,
                                const ReduceSubmission& submission) const {
  if (state.submitted.empty()) return;
  // Earlier submissions agree with one another, so comparing with one of them suffices.
  const auto& [other_rank, other] = *state.submitted.begin();
  const std::string& worker = workers_.at(static_cast<size_t>(rank));
  const std::string& other_worker = workers_.at(static_cast<size_t>(other_rank));
  for (const auto& [name, value] : other.sums) {
    const auto it = submission.sums.find(name);
    AD_CHECK(it != submission.sums.end(), kInvalidArgument,
             "ReduceStates round '{}': worker '{}' did not send tensor '{}', which worker '{}' "
             "sent; every worker must send the same tensors",
             round, worker, name, other_worker);
    AD_CHECK(it->second.shape() == value.shape(), kInvalidArgument,
             "ReduceStates round '{}': worker '{}' sent tensor '{}' with shape {}, but worker "
             "'{}' sent shape {}",
             round, worker, name, tensor::ShapeToString(it->second.shape()), other_worker,
             tensor::ShapeToString(value.shape()));
    AD_CHECK(ReductionOf(submission, name) == ReductionOf(other, name), kInvalidArgument,
             "ReduceStates round '{}': worker '{}' asks for reduction {} of tensor '{}', but "
             "worker '{}' asks for {}",
             round, worker, ReductionName(ReductionOf(submission, name)), name, other_worker,
             ReductionName(ReductionOf(other, name)));
  }
  for (const auto& [name, value] : submission.sums) {
    AD_CHECK(other.sums.count(name) > 0, kInvalidArgument,
             "ReduceStates round '{}': worker '{}' sent tensor '{}', which worker '{}' did not "
             "send; every worker must send the same tensors",
             round, worker, name, other_worker);
  }
}

TensorMap ReduceRounds::Reduce(const Round& state) const {
  int64_t replicas = 0;
  for (const auto& [rank, submission] : state.submitted) replicas += submission.replicas;
  const ReduceSubmission& first = state.submitted.begin()->second;
  TensorMap out;
  for (const auto& [name, value] : first.sums) {
    // std::map iterates by rank, so the sum's order is fixed: the result is reproducible.
    std::vector<const float*> inputs;
    for (const auto& [rank, submission] : state.submitted) {
      inputs.push_back(submission.sums.at(name).data<float>());
    }
    const bool mean = ReductionOf(first, name) == autodist::proto::STATE_REDUCTION_MEAN;
    Tensor reduced(DType::kFloat32, value.shape());
    float* result = reduced.data<float>();
    for (int64_t i = 0; i < value.numel(); ++i) {
      double sum = 0;  // double: the mean of many replicas keeps float32's precision
      for (const float* input : inputs) sum += input[i];
      result[i] = static_cast<float>(mean ? sum / static_cast<double>(replicas) : sum);
    }
    out.emplace(name, std::move(reduced));
  }
  return out;
}

std::shared_ptr<const TensorMap> ReduceRounds::Result(const std::string& round) const {
  const auto it = rounds_.find(round);
  return it == rounds_.end() ? nullptr : it->second.result;
}

std::optional<std::string> ReduceRounds::Failure(const std::string& round) const {
  const auto it = rounds_.find(round);
  return it == rounds_.end() ? std::nullopt : it->second.failure;
}

std::vector<std::string> ReduceRounds::Missing(const std::string& round) const {
  const auto it = rounds_.find(round);
  if (it == rounds_.end()) {
    return reduced_.count(round) > 0 ? std::vector<std::string>{} : workers_;
  }
  if (it->second.result) return {};
  std::vector<std::string> missing;
  for (size_t rank = 0; rank < workers_.size(); ++rank) {
    if (it->second.submitted.count(static_cast<int>(rank)) == 0) missing.push_back(workers_[rank]);
  }
  return missing;
}

void ReduceRounds::Collected(const std::string& round, int rank) {
  const auto it = rounds_.find(round);
  if (it == rounds_.end() || it->second.result == nullptr) return;
  std::vector<bool>& collected = it->second.collected;
  collected.at(static_cast<size_t>(rank)) = true;
  if (std::all_of(collected.begin(), collected.end(), [](bool c) { return c; })) {
    rounds_.erase(it);
    reduced_.insert(round);
  }
}

void ReduceRounds::Withdraw(const std::string& round, int rank) {
  const auto it = rounds_.find(round);
  if (it == rounds_.end()) return;
  if (it->second.result) {
    Collected(round, rank);
    return;
  }
  it->second.submitted.erase(rank);
  if (it->second.submitted.empty() && !it->second.failure) rounds_.erase(it);
}

size_t ReduceRounds::held() const {
  return static_cast<size_t>(std::count_if(rounds_.begin(), rounds_.end(), [](const auto& entry) {
    return !entry.second.submitted.empty() || entry.second.result != nullptr;
  }));
}

}  // namespace autodist::coordinator
