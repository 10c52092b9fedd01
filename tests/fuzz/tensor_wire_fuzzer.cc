// The tensor wire decoder (rpc/tensor_wire.h): a sequence of TensorPiece messages, as pushes and
// pulls carry them, assembled into tensors.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/common/error.h"
#include "runtime/rpc/tensor_wire.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  autodist::fuzz::FuzzInput input(data, size);
  // 16 MiB: what the assembler may allocate for what the pieces announce.
  autodist::rpc::PieceAssembler assembler("fuzz", int64_t{16} << 20);
  try {
    while (!input.empty()) {
      autodist::proto::TensorPiece piece;
      if (piece.ParseFromString(std::string(input.Record()))) assembler.Add(piece);
    }
    (void)assembler.Finish();
  } catch (const autodist::Error&) {
  }
  return 0;
}
