#include "runtime/compress/flat_compressor.h"

#include <deque>
#include <utility>

#include "runtime/common/error.h"
#include "runtime/compress/device_registry.h"
#include "runtime/compress/registry.h"

namespace autodist::compress {
namespace {

DeviceRegistry<FlatCompressorFactory>& Registry() {
  // Never destroyed: registrations run at static initialization.
  static auto* registry = new DeviceRegistry<FlatCompressorFactory>("flat compressor");
  return *registry;
}

// On the CPU: the registered compressor, reducing views of the buffer in place.
class HostFlatCompressor final : public FlatCompressor {
 public:
  explicit HostFlatCompressor(const CompressorOptions& options) : inner_(MakeCompressor(options)) {}

  void Reduce(const std::string& group, tensor::Tensor& buffer,
              const std::vector<FlatMember>& members, collective::Communicator& communicator,
              int64_t step) override {
    std::deque<tensor::Tensor> views;
    std::vector<NamedGradient> gradients;
    gradients.reserve(members.size());
    for (const FlatMember& member : members) {
      views.push_back(
          buffer.RowsView(member.offset, tensor::NumElements(member.shape)).Reshaped(member.shape));
      gradients.push_back(NamedGradient{member.name, &views.back()});
    }
    inner_->Reduce(group, gradients, communicator, step);
  }

  CompressionStats stats() const override { return inner_->stats(); }

 private:
  std::unique_ptr<Compressor> inner_;
};

}  // namespace

void RegisterFlatCompressor(CompressorKind kind, tensor::DeviceKind device,
                            FlatCompressorFactory make) {
  AD_CHECK(device != tensor::DeviceKind::kCpu, kInternal,
           "the CPU's flat compressors are the registered compressors");
  Registry().Add(kind, device, std::move(make));
}

bool HasFlatCompressor(CompressorKind kind, tensor::DeviceKind device) {
  if (device == tensor::DeviceKind::kCpu) return true;  // every kind is registered (registry.h)
  return Registry().Contains(kind, device);
}

std::unique_ptr<FlatCompressor> MakeFlatCompressor(const CompressorOptions& options,
                                                   tensor::DeviceKind device) {
  if (device == tensor::DeviceKind::kCpu) return std::make_unique<HostFlatCompressor>(options);
  const std::optional<FlatCompressorFactory> make = Registry().Find(options.kind, device);
  AD_CHECK(make.has_value(), kFailedPrecondition,
           "{} does not run on {} devices (it runs on the host path)", CompressorName(options.kind),
           tensor::DeviceKindName(device));
  return (*make)(options);
}

}  // namespace autodist::compress
