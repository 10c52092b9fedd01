// The overlap of the all-reduce with backward on the device's own clock: a one-worker job over
// NCCL with a fusion group per variable records a timeline, and the communicator's CUDA event
// times there (gpu/collective/collective_times.h, runtime/observe/device_spans.h) must show a
// group reduced on the communication stream before a later group's gradients were complete on
// the tensor stream, i.e. while backward was still computing on the GPU
// (runtime/observe/device_overlap.h). The host-clock counterpart on the CPU is
// launcher.RunTimelineTest.AllReduceGroupsAreReducedWhileBackwardRuns. Needs a GPU (SKIPPED
// without one) and a build with NCCL.
//
// Over 50 steps, expecting overlap in at least one: a small model's kernels are short, and the
// communication thread's wake-up and its call check may let backward finish first in most.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/observe/device_overlap.h"
#include "runtime/observe/device_spans.h"
#include "tests/gpu/gpu_job_test_util.h"
#include "tests/gpu/gpu_test_util.h"

namespace autodist::launcher {
namespace {

constexpr int kSteps = 50;

TEST(NcclDeviceOverlapJobTest, AGroupIsReducedOnTheGpuWhileBackwardStillComputesThere) {
  AUTODIST_SKIP_WITHOUT_GPU();
  if (!AUTODIST_WITH_NCCL) GTEST_SKIP() << "this build has no NCCL (the toolkit lacked nccl.h)";
  TempDir dir;
  JobParams params;
  params.name = "nccl-device-overlap";
  params.builder = "AllReduce";
  params.parameter_servers = 0;
  params.workers = 1;
  params.strategy_options = "      chunkSize: 1\n";  // a fusion group per variable
  params.batch = 512;
  params.steps = kSteps;
  params.extra_resources = "    gpusPerWorker: 1\n";
  cli::RunOptions options = OptionsFor(dir, WriteManifest(dir, JobYaml(params, dir / "ckpt")));
  options.timeline = dir / "job.trace.json";
  if (const char* runtime = std::getenv("AUTODIST_RUNTIME")) options.runtime = runtime;
  const RunOutcome outcome = RunManifest(options);
  ASSERT_EQ(outcome.exit_code, 0) << outcome.err << outcome.out;

  const auto by_process = observe::ReadDeviceReductions(options.timeline);
  ASSERT_EQ(by_process.size(), 1U) << "the one worker's device spans, from " << options.timeline;
  const auto steps = observe::SplitIntoSteps(by_process.begin()->second);
  EXPECT_EQ(steps.size(), static_cast<size_t>(kSteps));
  int overlapped_steps = 0;
  int64_t overlapped_us = 0;
  for (const auto& step : steps) {
    // Throws on times that cannot be one collective's (a start before its data was ready).
    const observe::DeviceOverlap overlap = observe::MeasureDeviceOverlap(step);
    EXPECT_GE(overlap.reductions, 2) << "a group per variable";
    if (overlap.overlapped > 0) ++overlapped_steps;
    overlapped_us += overlap.overlapped_us;
  }
  std::cout << "device overlap: " << overlapped_steps << " of " << steps.size()
            << " steps reduced a group while backward was computing, " << overlapped_us
            << " us of reduction in all\n";
  EXPECT_GT(overlapped_steps, 0)
      << "no group was reduced on the GPU while backward was still computing there";
}

}  // namespace
}  // namespace autodist::launcher
