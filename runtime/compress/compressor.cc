#include "runtime/compress/compressor.h"

#include "runtime/common/error.h"
#include "runtime/compress/horovod_compressor.h"
#include "runtime/compress/none_compressor.h"
#include "runtime/compress/powersgd_compressor.h"
#include "runtime/compress/topk_compressor.h"

namespace autodist::compress {

std::unique_ptr<Compressor> MakeCompressor(const CompressorOptions& options) {
  switch (options.kind) {
    case CompressorKind::kNone:
      return std::make_unique<NoneCompressor>(options);
    case CompressorKind::kHorovod:
    case CompressorKind::kHorovodEF:
      return std::make_unique<HorovodCompressor>(options);
    case CompressorKind::kPowerSGD:
      return std::make_unique<PowerSGDCompressor>(options);
    case CompressorKind::kTopKEF:
      return std::make_unique<TopKCompressorEF>(options);
  }
  Fail(ErrorCode::kInvalidArgument,
       "unknown compressor kind {}; expected one of NoneCompressor, HorovodCompressor, "
       "HorovodCompressorEF, PowerSGDCompressor, TopKCompressorEF",
       static_cast<int>(options.kind));
}

const char* CompressorName(CompressorKind kind) {
  switch (kind) {
    case CompressorKind::kNone:
      return "NoneCompressor";
    case CompressorKind::kHorovod:
      return "HorovodCompressor";
    case CompressorKind::kHorovodEF:
      return "HorovodCompressorEF";
    case CompressorKind::kPowerSGD:
      return "PowerSGDCompressor";
    case CompressorKind::kTopKEF:
      return "TopKCompressorEF";
  }
  return "UnknownCompressor";
}

}  // namespace autodist::compress
