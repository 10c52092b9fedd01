// The coordinator's job state under any sequence of member requests: Register, Heartbeat,
// Progress and Finish with messages decoded from the input, and deadlines checked between them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "proto/coordinator.pb.h"
#include "runtime/common/error.h"
#include "runtime/coordinator/job.h"
#include "runtime/strategy/resource_spec.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using autodist::coordinator::JobState;
  static const autodist::strategy::ResourceSpec spec =
      autodist::strategy::ResourceSpec::FromReplicaCounts({2, 0, 1, 1});
  autodist::fuzz::FuzzInput input(data, size);
  JobState::Clock::time_point now{};
  JobState job(spec, "fuzz-job", now);
  // The nodes of the job and some that are not.
  static const char* const kNodes[] = {"worker-0", "worker-1", "ps-0", "worker-9", ""};
  while (!input.empty()) {
    const uint8_t op = input.Byte();
    const std::string node = kNodes[input.Byte() % 5];
    now += std::chrono::milliseconds(input.Byte() * 100);
    try {
      switch (op % 6) {
        case 0: {
          autodist::proto::RegisterRequest request;
          if (request.ParseFromString(std::string(input.Record())))
            (void)job.Register(request, now);
          break;
        }
        case 1:
          job.Heartbeat(node, input.Byte(), now);
          break;
        case 2: {
          autodist::proto::ProgressReport report;
          if (report.ParseFromString(std::string(input.Record()))) job.Progress(report, now);
          break;
        }
        case 3:
          job.Finish(node, (input.Byte() & 1) != 0, std::string(input.Record()));
          break;
        case 4:
          (void)job.CheckDeadlines(now, std::chrono::seconds(10), now);
          break;
        default:
          if (job.rendezvous_complete()) (void)job.RegisterReplyFor(node);
          job.LeaveRendezvous(node);
          break;
      }
    } catch (const autodist::Error&) {
    }
  }
  return 0;
}
