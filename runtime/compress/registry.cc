#include "runtime/compress/registry.h"

#include <map>

#include "runtime/common/error.h"

namespace autodist::compress {
namespace {

// Filled during static initialization, read-only afterwards: no lock needed. A function-local
// static, so that registrations in other files find it constructed whatever the order.
std::map<CompressorKind, CompressorRegistration>& Registrations() {
  static std::map<CompressorKind, CompressorRegistration> registrations;
  return registrations;
}

}  // namespace

void RegisterCompressor(CompressorRegistration registration) {
  const CompressorKind kind = registration.kind;
  const bool added = Registrations().emplace(kind, std::move(registration)).second;
  AD_CHECK(added, kInternal, "compressor kind {} is registered twice", static_cast<int>(kind));
}

const CompressorRegistration& FindCompressor(CompressorKind kind) {
  const auto it = Registrations().find(kind);
  AD_CHECK(it != Registrations().end(), kInvalidArgument,
           "no compressor of kind {} is registered; registered: {}", static_cast<int>(kind),
           RegisteredCompressorNames());
  return it->second;
}

CompressorKind CompressorKindOfWireValue(int value, const std::string& what) {
  for (const auto& [kind, registration] : Registrations()) {
    if (static_cast<int>(kind) == value) return kind;
  }
  Fail(ErrorCode::kInvalidArgument, "{} has an unknown compressor value {}; expected one of {}",
       what, value, RegisteredCompressorNames());
}

std::string RegisteredCompressorNames() {
  std::string names;
  for (const auto& [kind, registration] : Registrations()) {
    if (!names.empty()) names += ", ";
    names += registration.name;
  }
  return names;
}

}  // namespace autodist::compress
