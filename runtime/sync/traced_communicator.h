// A Communicator that records each collective as a span on the active timeline
// (runtime/observe/timeline.h) and passes it on: what a timeline shows of the all-reduce groups'
// communication, apart from the compression around it. Installed only while a timeline records.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/collective/communicator.h"

namespace autodist::sync {

class TracedCommunicator final : public collective::Communicator {
 public:
  explicit TracedCommunicator(std::unique_ptr<collective::Communicator> inner)
      : inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  void AllReduceSum(void* data, size_t count, collective::ElementType type,
                    collective::AllReduceAlgorithm algorithm, const std::string& tag) override;
  void AllGather(const void* in, size_t count, collective::ElementType type, void* out,
                 const std::string& tag) override;
  void ReduceScatterSum(const void* in, void* out, size_t count, collective::ElementType type,
                        const std::string& tag) override;
  std::vector<size_t> AllGatherV(const void* in, size_t count, collective::ElementType type,
                                 std::vector<std::byte>& out, const std::string& tag) override;
  void Broadcast(void* data, size_t bytes, int root, const std::string& tag) override;
  void Barrier(const std::string& tag) override;
  // Not traced: it comes from the heartbeat's thread, not a step.
  void Abort(const std::string& reason) override { inner_->Abort(reason); }
  void DataReady(const std::string& tag) override { inner_->DataReady(tag); }
  int64_t bytes_sent() const override { return inner_->bytes_sent(); }
  int64_t bytes_received() const override { return inner_->bytes_received(); }

 private:
  std::unique_ptr<collective::Communicator> inner_;
};

}  // namespace autodist::sync
