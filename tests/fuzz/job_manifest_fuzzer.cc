// The AutoDistJob manifest parser and validator (YAML or JSON text): any input parses into a job
// or fails with autodist::Error; the job then writes back to YAML that parses to the same job.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/job/job_parser.h"
#include "runtime/job/job_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  autodist::job::JobSpec job;
  try {
    job = autodist::job::ParseJob(text, "fuzz.yaml", "");
  } catch (const autodist::Error&) {
    return 0;
  }
  // What the operator hands its pods: the job written out must parse back to itself.
  const std::string written = autodist::job::JobToYaml(job);
  const autodist::job::JobSpec again = autodist::job::ParseJob(written, "fuzz-written.yaml", "");
  if (!(again == job)) __builtin_trap();
  return 0;
}
