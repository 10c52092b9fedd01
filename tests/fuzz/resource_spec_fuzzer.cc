// AutoDist's resource_spec.yml parser: a ResourceSpec or autodist::Error, never anything else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/strategy/resource_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const autodist::strategy::ResourceSpec spec = autodist::strategy::ResourceSpec::FromYamlString(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.yml");
    (void)spec.NumGpus();
  } catch (const autodist::Error&) {
  }
  return 0;
}
