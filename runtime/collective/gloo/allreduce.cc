#include "runtime/collective/gloo/allreduce.h"

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/collective/gloo/sum.h"

namespace autodist::collective::gloo_detail {
namespace {

// In-place sum in the form Gloo's algorithm objects take. The function is looked up once: for
// float16 it depends on the CPU.
template <ElementType kType, typename T>
void InPlaceSum(T* a, const T* b, size_t count) {
  static const SumFunction sum = SumFor(kType);
  sum(a, a, b, count);
}

template <ElementType kType, typename T>
const gloo::ReductionFunction<T>* Reduction() {
  static const gloo::ReductionFunction<T> function(gloo::SUM, &InPlaceSum<kType, T>);
  return &function;
}

template <ElementType kType, typename T>
std::unique_ptr<gloo::Algorithm> MakeHalvingDoubling(const std::shared_ptr<gloo::Context>& context,
                                                     void* buffer, size_t count) {
  return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(
      context, std::vector<T*>{static_cast<T*>(buffer)}, static_cast<int>(count),
      Reduction<kType, T>());
}

template <typename T>
void SetRingOutput(gloo::AllreduceOptions& options, void* data, size_t count) {
  options.setOutput(static_cast<T*>(data), count);
}

}  // namespace

struct AllReducer::Cached {
  std::vector<std::byte> buffer;  // the algorithm's data: it keeps a pointer to it
  std::unique_ptr<gloo::Algorithm> algorithm;
};

AllReducer::AllReducer(std::shared_ptr<gloo::Context> collectives,
                       std::shared_ptr<gloo::Context> algorithms)
    : collectives_(std::move(collectives)), algorithms_(std::move(algorithms)) {}

AllReducer::~AllReducer() = default;

void AllReducer::Ring(void* data, size_t count, ElementType type, size_t segment_bytes) {
  gloo::AllreduceOptions options(collectives_);
  options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  switch (type) {
    case ElementType::kFloat32:
      SetRingOutput<float>(options, data, count);
      break;
    case ElementType::kFloat16:
      SetRingOutput<gloo::float16>(options, data, count);
      break;
    case ElementType::kInt64:
      SetRingOutput<int64_t>(options, data, count);
      break;
  }
  options.setReduceFunction(SumFor(type));
  options.setTag(kDataTag);
  options.setMaxSegmentSize(segment_bytes);
  gloo::allreduce(options);
}

AllReducer::Cached& AllReducer::HalvingDoublingFor(const std::string& tag, size_t count,
                                                   ElementType type) {
  std::unique_ptr<Cached>& cached = halving_doubling_[Key(tag, count, type)];
  if (cached != nullptr) return *cached;
  auto fresh = std::make_unique<Cached>();
  fresh->buffer.resize(count * ElementBytes(type));
  void* buffer = fresh->buffer.data();
  switch (type) {
    case ElementType::kFloat32:
      fresh->algorithm =
          MakeHalvingDoubling<ElementType::kFloat32, float>(algorithms_, buffer, count);
      break;
    case ElementType::kFloat16:
      fresh->algorithm =
          MakeHalvingDoubling<ElementType::kFloat16, gloo::float16>(algorithms_, buffer, count);
      break;
    case ElementType::kInt64:
      fresh->algorithm =
          MakeHalvingDoubling<ElementType::kInt64, int64_t>(algorithms_, buffer, count);
      break;
  }
  cached = std::move(fresh);
  return *cached;
}

void AllReducer::HalvingDoubling(void* data, size_t count, ElementType type, const std::string& tag,
                                 size_t piece_bytes) {
  const size_t element = ElementBytes(type);
  const size_t piece = std::max<size_t>(1, piece_bytes / element);
  auto* bytes = static_cast<std::byte*>(data);
  for (size_t offset = 0; offset < count; offset += piece) {
    const size_t length = std::min(piece, count - offset);
    Cached& cached = HalvingDoublingFor(tag, length, type);
    std::memcpy(cached.buffer.data(), bytes + offset * element, length * element);
    cached.algorithm->run();
    std::memcpy(bytes + offset * element, cached.buffer.data(), length * element);
  }
}

}  // namespace autodist::collective::gloo_detail
