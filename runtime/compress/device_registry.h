// What a device's backend adds to the compressors: factories keyed by (compressor kind, device
// kind), registered when the backend is installed and looked up when a replica's work starts.
// The flat forms of the all-reduce (flat_compressor.h) and the encoders of parameter-server
// pushes (device_push_encoder.h) are both such a table; this is the one way they are kept.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/compress/compressor.h"
#include "runtime/tensor/device.h"

namespace autodist::compress {

template <typename Factory>
class DeviceRegistry {
 public:
  // `what` names the table in errors: "flat compressor", "push encoder".
  explicit DeviceRegistry(const char* what) : what_(what) {}

  // A second registration of the same pair is kInternal.
  void Add(CompressorKind kind, tensor::DeviceKind device, Factory make) {
    const std::lock_guard lock(mutex_);
    const bool added = factories_.emplace(std::pair{kind, device}, std::move(make)).second;
    AD_CHECK(added, kInternal, "a second {} {} for {} was registered", CompressorName(kind), what_,
             tensor::DeviceKindName(device));
  }

  bool Contains(CompressorKind kind, tensor::DeviceKind device) const {
    const std::lock_guard lock(mutex_);
    return factories_.contains({kind, device});
  }

  // A copy of the factory (it is called outside the lock); nullopt when none is registered.
  std::optional<Factory> Find(CompressorKind kind, tensor::DeviceKind device) const {
    const std::lock_guard lock(mutex_);
    const auto it = factories_.find({kind, device});
    if (it == factories_.end()) return std::nullopt;
    return it->second;
  }

 private:
  const char* what_;
  mutable std::mutex mutex_;
  std::map<std::pair<CompressorKind, tensor::DeviceKind>, Factory> factories_;
};

}  // namespace autodist::compress
