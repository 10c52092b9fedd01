// The compressed-push decoder: float32 tensors sent as float16 halves or top-k values, the
// encodings of rpc/tensor_wire.h. The input's bytes choose each tensor's encoding, dims, TOPK
// positions and data, so that the fuzzer spends its time in the decoding, not in parsing.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/rpc/tensor_wire.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

constexpr int32_t kOnnxFloat = 1;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  autodist::fuzz::FuzzInput input(data, size);
  autodist::rpc::PieceAssembler assembler("fuzz", int64_t{16} << 20);
  try {
    while (!input.empty()) {
      autodist::proto::TensorPiece piece;
      piece.set_name("t" + std::to_string(input.Byte() % 4));
      const uint8_t flags = input.Byte();
      if ((flags & 1) != 0) {  // a first piece: type, dims, encoding and TOPK positions
        piece.set_data_type((flags & 2) != 0 ? kOnnxFloat : input.Byte());
        for (int d = input.Byte() % 4; d > 0; --d) piece.add_dims(input.Byte() - 8);
        piece.set_encoding(static_cast<autodist::proto::TensorPiece::Encoding>((flags >> 2) % 4));
        for (int i = input.Byte() % 16; i > 0; --i) piece.add_indices(input.Byte() - 4);
        if ((flags & 32) != 0) piece.set_sparse(true);
      }
      piece.set_offset(input.Byte() * ((flags & 64) != 0 ? 2 : 4));
      piece.set_data(std::string(input.Record()));
      assembler.Add(piece);
    }
    (void)assembler.Finish();
  } catch (const autodist::Error&) {
  }
  return 0;
}
