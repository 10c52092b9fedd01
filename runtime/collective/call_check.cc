#include "runtime/collective/call_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

#include "runtime/common/error.h"

namespace autodist::collective::detail {
namespace {

// Record layout: collective (1 byte), type (1), tag length clipped (2), detail (4), count (8),
// tag hash (8), then the tag's first kTagBytes bytes.
constexpr size_t kHeaderBytes = 24;
constexpr size_t kTagBytes = kSignatureBytes - kHeaderBytes;
// Messages list at most this many other ranks.
constexpr size_t kListedRanks = 8;

// What a record says, as far as it can: the tag only by its hash and first bytes.
struct Decoded {
  Collective collective;
  ElementType type;
  int32_t detail;
  uint64_t count;
  uint64_t tag_hash;
  std::string tag;  // the first bytes, "..." appended when clipped
};

// FNV-1a: the same on every rank and build, unlike std::hash.
uint64_t TagHash(std::string_view tag) {
  uint64_t hash = 1469598103934665603ULL;
  for (char c : tag) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

template <typename T>
void Put(SignatureRecord& record, size_t offset, T value) {
  std::memcpy(record.data() + offset, &value, sizeof(T));
}

template <typename T>
T Take(const SignatureRecord& record, size_t offset) {
  T value;
  std::memcpy(&value, record.data() + offset, sizeof(T));
  return value;
}

Decoded Decode(const SignatureRecord& record) {
  Decoded d{};
  d.collective = static_cast<Collective>(Take<uint8_t>(record, 0));
  d.type = static_cast<ElementType>(Take<uint8_t>(record, 1));
  const auto length = Take<uint16_t>(record, 2);
  d.detail = Take<int32_t>(record, 4);
  d.count = Take<uint64_t>(record, 8);
  d.tag_hash = Take<uint64_t>(record, 16);
  d.tag.assign(record.data() + kHeaderBytes, std::min<size_t>(length, kTagBytes));
  if (length > kTagBytes) d.tag += "...";
  return d;
}

const char* AlgorithmName(int32_t algorithm) {
  switch (static_cast<AllReduceAlgorithm>(algorithm)) {
    case AllReduceAlgorithm::kAuto:
      return "Auto";
    case AllReduceAlgorithm::kRing:
      return "Ring";
    case AllReduceAlgorithm::kHalvingDoubling:
      return "HalvingDoubling";
    case AllReduceAlgorithm::kRecursiveDoubling:
      return "RecursiveDoubling";
    case AllReduceAlgorithm::kDirect:
      return "Direct";
  }
  return "unknown";
}

bool HasElements(Collective collective) {
  return collective == Collective::kAllReduceSum || collective == Collective::kAllGather ||
         collective == Collective::kAllGatherV || collective == Collective::kReduceScatterSum;
}

// "{what}: {property} differ across ranks: this rank has X; rank 0: Y, rank 2: Z".
[[noreturn]] void Disagree(const std::string& what, const char* property, int rank,
                           const std::vector<Decoded>& all,
                           const std::function<std::string(const Decoded&)>& show) {
  std::string others;
  size_t listed = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    if (static_cast<int>(r) == rank) continue;
    if (listed == kListedRanks) {
      others += fmt::format(", and {} more", all.size() - 1 - listed);
      break;
    }
    others += fmt::format("{}rank {}: {}", listed == 0 ? "" : ", ", r, show(all[r]));
    ++listed;
  }
  Fail(ErrorCode::kInvalidArgument,
       "{}: {} differ across ranks: this rank has {}; {}; every rank must run the same "
       "collectives in the same order with the same sizes",
       what, property, show(all[static_cast<size_t>(rank)]), others);
}

}  // namespace

const char* CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduceSum:
      return "AllReduceSum";
    case Collective::kAllGather:
      return "AllGather";
    case Collective::kAllGatherV:
      return "AllGatherV";
    case Collective::kBroadcast:
      return "Broadcast";
    case Collective::kBarrier:
      return "Barrier";
    case Collective::kReduceScatterSum:
      return "ReduceScatterSum";
  }
  return "unknown collective";
}

bool OverlapsOtherThanOwnPart(const void* whole, const void* part, size_t part_bytes, int rank,
                              int size) {
  const auto* first = static_cast<const std::byte*>(whole);
  const auto* own = static_cast<const std::byte*>(part);
  const bool overlaps =
      own < first + part_bytes * static_cast<size_t>(size) && first < own + part_bytes;
  return overlaps && own != first + static_cast<size_t>(rank) * part_bytes;
}

void CheckReduceScatterBuffers(const CallSignature& call, const void* in, const void* out, int rank,
                               int size) {
  if (call.count == 0) return;
  AD_CHECK(in != nullptr && out != nullptr, kInvalidArgument,
           "{}: in and out must not be null for {} elements", Describe(call, rank, size),
           call.count);
  AD_CHECK(!OverlapsOtherThanOwnPart(in, out, call.count * ElementBytes(call.type), rank, size),
           kInvalidArgument,
           "{}: out overlaps in other than as this rank's own block (in + {} elements)",
           Describe(call, rank, size), static_cast<size_t>(rank) * call.count);
}

SignatureRecord Encode(const CallSignature& call) {
  SignatureRecord record{};
  Put<uint8_t>(record, 0, static_cast<uint8_t>(call.collective));
  Put<uint8_t>(record, 1, static_cast<uint8_t>(call.type));
  Put<uint16_t>(record, 2, static_cast<uint16_t>(std::min<size_t>(call.tag.size(), 0xffff)));
  Put<int32_t>(record, 4, call.detail);
  Put<uint64_t>(record, 8, call.count);
  Put<uint64_t>(record, 16, TagHash(call.tag));
  std::memcpy(record.data() + kHeaderBytes, call.tag.data(), std::min(call.tag.size(), kTagBytes));
  return record;
}

std::string Describe(const CallSignature& call, int rank, int size) {
  return fmt::format("{} '{}' (rank {} of {})", CollectiveName(call.collective), call.tag, rank,
                     size);
}

std::vector<uint64_t> CheckAgreement(const CallSignature& mine, int rank,
                                     const std::vector<SignatureRecord>& records) {
  const int size = static_cast<int>(records.size());
  AD_CHECK(rank >= 0 && rank < size, kInternal, "{}: {} records for {} ranks",
           Describe(mine, rank, size), records.size(), size);
  std::vector<Decoded> all;
  all.reserve(records.size());
  for (const SignatureRecord& record : records) all.push_back(Decode(record));
  const std::string what = Describe(mine, rank, size);
  const Decoded& self = all[static_cast<size_t>(rank)];
  const auto any_differs = [&](auto field) {
    return std::any_of(all.begin(), all.end(),
                       [&](const Decoded& d) { return field(d) != field(self); });
  };
  if (any_differs([](const Decoded& d) { return std::pair(d.collective, d.tag_hash); })) {
    Disagree(what, "collectives", rank, all, [](const Decoded& d) {
      return fmt::format("{} '{}'", CollectiveName(d.collective), d.tag);
    });
  }
  if (HasElements(mine.collective) && any_differs([](const Decoded& d) { return d.type; })) {
    Disagree(what, "element types", rank, all,
             [](const Decoded& d) { return std::string(ElementTypeName(d.type)); });
  }
  if (mine.collective == Collective::kAllReduceSum &&
      any_differs([](const Decoded& d) { return d.detail; })) {
    Disagree(what, "all-reduce algorithms", rank, all,
             [](const Decoded& d) { return std::string(AlgorithmName(d.detail)); });
  }
  if (mine.collective == Collective::kBroadcast &&
      any_differs([](const Decoded& d) { return d.detail; })) {
    Disagree(what, "broadcast roots", rank, all,
             [](const Decoded& d) { return fmt::format("root {}", d.detail); });
  }
  if (mine.collective != Collective::kAllGatherV &&
      any_differs([](const Decoded& d) { return d.count; })) {
    const char* unit = mine.collective == Collective::kBroadcast ? "bytes" : "elements";
    Disagree(what, mine.collective == Collective::kBroadcast ? "sizes" : "element counts", rank,
             all, [unit](const Decoded& d) { return fmt::format("{} {}", d.count, unit); });
  }
  std::vector<uint64_t> counts;
  counts.reserve(all.size());
  for (const Decoded& d : all) counts.push_back(d.count);
  return counts;
}

}  // namespace autodist::collective::detail
