#include "runtime/rpc/tensor_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/common/error.h"
#include "runtime/tensor/float16.h"
#include "tests/tensor/host_backed_memory.h"

namespace autodist::rpc {
namespace {

using autodist::proto::TensorPiece;
using tensor::DType;
using tensor::Tensor;
using ::testing::HasSubstr;

std::vector<TensorPiece> Pieces(const std::string& name, const Tensor& value, int64_t bytes) {
  std::vector<TensorPiece> pieces;
  EmitTensor(name, value, 0, bytes, [&](TensorPiece&& piece) { pieces.push_back(piece); });
  return pieces;
}

std::string ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

Tensor Iota(tensor::Shape shape) {
  Tensor t(DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i) * 0.5F;
  return t;
}

TEST(TensorWire, SplitsIntoPiecesAndReassemblesBitExact) {
  const Tensor value = Iota({5, 7});  // 140 bytes
  const auto pieces = Pieces("w", value, 64);
  ASSERT_EQ(pieces.size(), 3U);  // 64 + 64 + 12
  EXPECT_EQ(pieces[0].dims_size(), 2);
  EXPECT_EQ(pieces[1].dims_size(), 0);  // only the first piece carries the header
  EXPECT_EQ(pieces[2].offset(), 128);
  EXPECT_EQ(pieces[2].data().size(), 12U);

  PieceAssembler assembler("peer", 1 << 20);
  for (const auto& piece : pieces) assembler.Add(piece);
  auto received = assembler.Finish();
  ASSERT_EQ(received.count("w"), 1U);
  const Tensor& got = received.at("w").dense;
  EXPECT_EQ(got.shape(), value.shape());
  for (int64_t i = 0; i < value.numel(); ++i)
    EXPECT_EQ(got.data<float>()[i], value.data<float>()[i]);
  EXPECT_EQ(assembler.bytes_received(), 140);
}

// For values that go on to a GPU (a GPU worker's parameter-server replies) dense tensors are
// received into the device kind's host staging memory, here a stand-in that counts what it lends.
TEST(TensorWire, ReceivesIntoTheHostStagingMemoryOfTheDevicesItIsFor) {
  if (tensor::HasMemory(tensor::DeviceKind::kCuda)) GTEST_SKIP() << "a CUDA backend is linked";
  tensor::testing::StagingMemory memory;
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, &memory);
  const Tensor value = Iota({5, 7});
  PieceAssembler assembler("peer", 1 << 20, tensor::DeviceKind::kCuda);
  for (const auto& piece : Pieces("w", value, 64)) assembler.Add(piece);
  const auto received = assembler.Finish();
  const Tensor& got = received.at("w").dense;
  EXPECT_EQ(got.device(), tensor::Device::Cpu());
  ASSERT_EQ(memory.lent.size(), 1U);
  EXPECT_EQ(got.raw(), memory.lent[0]);
  EXPECT_EQ(std::memcmp(got.raw(), value.raw(), value.nbytes()), 0);
  tensor::InstallDeviceMemory(tensor::DeviceKind::kCuda, nullptr);
}

// AddFrom: the data comes from a callback (the data channel's socket), straight into the tensor
// for RAW data, decoded for encoded data, and checked before the callback is asked for anything.
TEST(TensorWire, AddFromFillsRawDataInPlaceAndDecodesEncodedData) {
  const Tensor value = Iota({3, 5});  // 60 bytes
  const char* bytes = static_cast<const char*>(value.raw());
  PieceAssembler assembler("peer", 1 << 20);
  const TensorPiece header = TensorHeader("w", value, 2);
  EXPECT_EQ(header.name(), "w");
  EXPECT_TRUE(header.data().empty());
  std::vector<char*> destinations;
  int64_t offset = 0;
  const auto fill = [&](char* destination, size_t length) {
    destinations.push_back(destination);
    std::memcpy(destination, bytes + offset, length);
    offset += static_cast<int64_t>(length);
  };
  assembler.AddFrom(header, 40, fill);
  TensorPiece rest;
  rest.set_name("w");
  rest.set_offset(40);
  assembler.AddFrom(rest, 20, fill);
  // The second piece went right after the first: the tensor's own storage, no scratch copy.
  ASSERT_EQ(destinations.size(), 2U);
  EXPECT_EQ(destinations[1], destinations[0] + 40);

  // FLOAT16: decoded from the bytes the callback gave.
  const std::vector<uint16_t> halves = {0x3C00, 0xC000};  // 1, -2
  std::vector<TensorPiece> encoded;
  EmitHalves("h", {2}, halves, 0, 1 << 20, [&](TensorPiece&& piece) { encoded.push_back(piece); });
  ASSERT_EQ(encoded.size(), 1U);
  std::string data;
  data.swap(*encoded[0].mutable_data());
  assembler.AddFrom(
      encoded[0], static_cast<int64_t>(data.size()),
      [&](char* destination, size_t length) { std::memcpy(destination, data.data(), length); });
  auto received = assembler.Finish();
  const Tensor& got = received.at("w").dense;
  EXPECT_EQ(received.at("w").replicas, 2);
  for (int64_t i = 0; i < value.numel(); ++i)
    EXPECT_EQ(got.data<float>()[i], value.data<float>()[i]);
  EXPECT_EQ(received.at("h").dense.data<float>()[0], 1.0F);
  EXPECT_EQ(received.at("h").dense.data<float>()[1], -2.0F);

  // Past the end: rejected before the callback runs.
  PieceAssembler checked("peer", 1 << 20);
  bool called = false;
  EXPECT_THAT(ErrorOf([&] {
                checked.AddFrom(TensorHeader("w", value, 0), 61,
                                [&](char* /*destination*/, size_t /*length*/) { called = true; });
              }),
              HasSubstr("tensor 'w': 1 bytes past its end (60 bytes announced)"));
  EXPECT_FALSE(called);
}

TEST(TensorWire, InterleavedTensorsAndEmptyTensor) {
  const auto a = Pieces("a", Iota({10}), 16);
  const auto b = Pieces("b", Tensor(DType::kFloat32, {0, 3}), 16);
  ASSERT_EQ(b.size(), 1U);
  PieceAssembler assembler("peer", 1 << 20);
  assembler.Add(a[0]);
  assembler.Add(b[0]);
  for (size_t i = 1; i < a.size(); ++i) assembler.Add(a[i]);
  auto received = assembler.Finish();
  EXPECT_EQ(received.at("a").dense.data<float>()[9], 4.5F);
  EXPECT_EQ(received.at("b").dense.shape(), (tensor::Shape{0, 3}));
}

TEST(TensorWire, SparseGradientKeepsIndicesAndReplicas) {
  tensor::SparseGradient gradient;
  gradient.indices = Tensor::FromVector<int64_t>({2}, {1, 4});
  gradient.values = Iota({2, 3});
  gradient.dense_shape = {6, 3};
  std::vector<TensorPiece> pieces;
  EmitSparse("emb", gradient, 3, 8, [&](TensorPiece&& piece) { pieces.push_back(piece); });
  PieceAssembler assembler("peer", 1 << 20);
  for (const auto& piece : pieces) assembler.Add(piece);
  auto received = assembler.Finish().at("emb");
  ASSERT_TRUE(received.is_sparse());
  EXPECT_EQ(received.indices->data<int64_t>()[1], 4);
  EXPECT_EQ(received.dense.data<float>()[5], 2.5F);
  EXPECT_EQ(received.replicas, 3);
}

TEST(TensorWire, RejectsMalformedPieces) {
  const auto pieces = Pieces("w", Iota({4, 4}), 16);
  {
    PieceAssembler assembler("ps-0", 1 << 20);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(pieces[1]); }), HasSubstr("before its first piece"));
  }
  {
    PieceAssembler assembler("ps-0", 1 << 20);
    assembler.Add(pieces[0]);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(pieces[2]); }), HasSubstr("offset 32 where 16"));
  }
  {
    PieceAssembler assembler("ps-0", 1 << 20);
    assembler.Add(pieces[0]);
    EXPECT_THAT(ErrorOf([&] { (void)assembler.Finish(); }),
                HasSubstr("'w' is incomplete: 16 of 64 bytes"));
  }
  {
    PieceAssembler assembler("ps-0", 32);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(pieces[0]); }), HasSubstr("limit of 32 bytes"));
  }
  {
    TensorPiece huge = pieces[0];
    huge.clear_dims();
    huge.add_dims(int64_t{1} << 40);
    huge.add_dims(int64_t{1} << 40);
    PieceAssembler assembler("ps-0", int64_t{1} << 30);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(huge); }), HasSubstr("larger than the limit"));
  }
  {
    TensorPiece negative = pieces[0];
    negative.set_dims(0, -4);
    PieceAssembler assembler("ps-0", 1 << 20);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(negative); }), HasSubstr("negative dimension"));
  }
  {
    TensorPiece strange = pieces[0];
    strange.set_data_type(8);  // string
    PieceAssembler assembler("ps-0", 1 << 20);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(strange); }), HasSubstr("unsupported data type 8"));
  }
  {
    TensorPiece bad_sparse = pieces[0];
    bad_sparse.set_sparse(true);
    bad_sparse.add_indices(0);
    PieceAssembler assembler("ps-0", 1 << 20);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(bad_sparse); }), HasSubstr("1 row indices for 4 rows"));
  }
  {
    PieceAssembler assembler("ps-0", 1 << 20);
    for (const auto& piece : pieces) assembler.Add(piece);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(pieces[0]); }), HasSubstr("sent twice"));
  }
  {
    TensorPiece long_tail = pieces[3];
    long_tail.mutable_data()->append("12345678");
    PieceAssembler assembler("ps-0", 1 << 20);
    for (size_t i = 0; i < 3; ++i) assembler.Add(pieces[i]);
    EXPECT_THAT(ErrorOf([&] { assembler.Add(long_tail); }), HasSubstr("8 bytes past its end"));
  }
}

// Compressed encodings: what the pieces of EmitHalves / EmitTopK decode to.
std::vector<TensorPiece> HalfPieces(const std::string& name, const Tensor& value, int64_t bytes) {
  std::vector<uint16_t> halves(static_cast<size_t>(value.numel()));
  tensor::FloatsToHalves(value.data<float>(), halves.size(), halves.data());
  std::vector<TensorPiece> pieces;
  EmitHalves(name, value.shape(), halves, 2, bytes, [&](TensorPiece&& p) { pieces.push_back(p); });
  return pieces;
}

std::vector<TensorPiece> TopKPieces(const std::string& name, tensor::Shape shape,
                                    const std::vector<int64_t>& indices,
                                    const std::vector<float>& values, int64_t bytes) {
  std::vector<TensorPiece> pieces;
  EmitTopK(name, shape, indices, values, 0, bytes, [&](TensorPiece&& p) { pieces.push_back(p); });
  return pieces;
}

ReceivedTensor Assemble(const std::vector<TensorPiece>& pieces) {
  PieceAssembler assembler("peer", 1 << 20);
  for (const auto& piece : pieces) assembler.Add(piece);
  auto received = assembler.Finish();
  EXPECT_EQ(received.size(), 1U);
  return std::move(received.begin()->second);
}

TEST(TensorWire, Float16IsExactForHalvesAndRoundedOtherwise) {
  // Representable: 0.5 steps, small integers, a subnormal half, the largest half.
  const Tensor exact = Tensor::FromVector<float>(
      {2, 4}, {0.5F, -3.0F, 1.0F + 0x1p-10F, 0x1p-24F, 65504.0F, 0.0F, -0.0F, 1024.0F});
  // 25 bytes per piece: cut at 24, so no half straddles two pieces.
  const auto pieces = HalfPieces("w", exact, 25);
  ASSERT_EQ(pieces.size(), 1U);
  EXPECT_EQ(pieces[0].encoding(), TensorPiece::FLOAT16);
  EXPECT_EQ(pieces[0].data().size(), 16U);  // half of the 32 float32 bytes
  const ReceivedTensor got = Assemble(pieces);
  EXPECT_EQ(got.dense.dtype(), DType::kFloat32);
  EXPECT_EQ(got.dense.shape(), exact.shape());
  EXPECT_EQ(got.replicas, 2);
  EXPECT_EQ(got.wire_bytes, 16);
  for (int64_t i = 0; i < exact.numel(); ++i) {
    EXPECT_EQ(std::signbit(got.dense.data<float>()[i]), std::signbit(exact.data<float>()[i]));
    EXPECT_EQ(got.dense.data<float>()[i], exact.data<float>()[i]) << i;
  }

  // Not representable: within float16's rounding (relative 2^-11), over several pieces.
  Tensor value = Iota({3, 11});
  for (int64_t i = 0; i < value.numel(); ++i) value.data<float>()[i] = 0.1F * float(i) - 1.3F;
  const auto many = HalfPieces("v", value, 7);  // cut at 6 bytes: 3 halves per piece
  EXPECT_EQ(many.size(), 11U);
  const ReceivedTensor rounded = Assemble(many);
  EXPECT_EQ(rounded.wire_bytes, 66);
  for (int64_t i = 0; i < value.numel(); ++i) {
    const float original = value.data<float>()[i];
    EXPECT_EQ(rounded.dense.data<float>()[i], tensor::HalfToFloat(tensor::FloatToHalf(original)));
    EXPECT_NEAR(rounded.dense.data<float>()[i], original, std::fabs(original) * 0x1p-11F) << i;
  }
}

TEST(TensorWire, TopKScattersIntoZeros) {
  const std::vector<int64_t> indices = {0, 3, 4, 9, 11};
  const std::vector<float> values = {1.5F, -2.0F, 0.25F, 8.0F, -0.5F};
  const auto pieces = TopKPieces("w", {3, 4}, indices, values, 9);  // cut at 8: 2 values each
  ASSERT_EQ(pieces.size(), 3U);
  EXPECT_EQ(pieces[0].encoding(), TensorPiece::TOPK);
  EXPECT_EQ(pieces[0].indices_size(), 5);
  EXPECT_EQ(pieces[1].indices_size(), 0);
  const ReceivedTensor got = Assemble(pieces);
  EXPECT_FALSE(got.is_sparse());
  EXPECT_EQ(got.dense.shape(), (tensor::Shape{3, 4}));
  EXPECT_EQ(got.wire_bytes, 5 * 12);
  std::vector<float> expected(12, 0.0F);
  for (size_t i = 0; i < indices.size(); ++i) expected[size_t(indices[i])] = values[i];
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(got.dense.data<float>()[i], expected[size_t(i)]) << i;

  // Nothing picked: a zero tensor in one piece.
  const ReceivedTensor none = Assemble(TopKPieces("z", {2}, {}, {}, 8));
  EXPECT_EQ(none.dense.data<float>()[0], 0.0F);
  EXPECT_EQ(none.dense.data<float>()[1], 0.0F);
}

TEST(TensorWire, RejectsMalformedEncodings) {
  const auto reject = [](const std::vector<TensorPiece>& pieces, const std::string& message) {
    PieceAssembler assembler("worker 1 step 2", 1 << 20);
    const std::string error = ErrorOf([&] {
      for (const auto& piece : pieces) assembler.Add(piece);
      (void)assembler.Finish();
    });
    EXPECT_THAT(error, HasSubstr("worker 1 step 2: "));
    EXPECT_THAT(error, HasSubstr(message));
  };
  const auto halves = HalfPieces("w", Iota({4}), 4);  // 2 halves per piece
  TensorPiece unknown = halves[0];
  unknown.set_encoding(static_cast<TensorPiece::Encoding>(7));
  reject({unknown}, "tensor 'w' has unknown encoding 7; expected RAW (0), FLOAT16 (1) or TOPK (2)");
  TensorPiece odd = halves[0];
  odd.mutable_data()->pop_back();
  reject({odd}, "FLOAT16 tensor 'w': a piece of 3 bytes, not a whole number of halves");
  TensorPiece wrong_type = halves[0];
  wrong_type.set_data_type(static_cast<int32_t>(DType::kInt64));
  reject({wrong_type}, "tensor 'w' is encoded as FLOAT16, which only dense float32 tensors may be");
  TensorPiece sparse = halves[0];
  sparse.set_sparse(true);
  reject({sparse}, "tensor 'w' is encoded as FLOAT16, which only dense float32 tensors may be");
  TensorPiece late_header = halves[1];
  late_header.set_encoding(TensorPiece::FLOAT16);
  reject({halves[0], late_header}, "only the first piece of tensor 'w' may carry its header");
  reject({halves[0]}, "tensor 'w' is incomplete: 4 of 8 bytes arrived");

  reject(TopKPieces("t", {2, 3}, {1, 6}, {1.0F, 2.0F}, 64),
         "TOPK tensor 't': index 6 is outside its 6 elements");
  reject(TopKPieces("t", {2, 3}, {-1}, {1.0F}, 64),
         "TOPK tensor 't': index -1 is outside its 6 elements");
  reject(TopKPieces("t", {2, 3}, {2, 2}, {1.0F, 2.0F}, 64),
         "TOPK tensor 't': index 2 follows 2; indices must be strictly ascending");
  reject(TopKPieces("t", {2, 3}, {4, 1}, {1.0F, 2.0F}, 64), "index 1 follows 4");
  reject(TopKPieces("t", {2}, {0, 1, 2}, {1.0F, 2.0F, 3.0F}, 64),
         "TOPK tensor 't' sends 3 elements of a tensor of 2");
  auto missing = TopKPieces("t", {2, 3}, {1, 4}, {1.0F, 2.0F}, 64);
  missing[0].mutable_data()->resize(4);  // one value for two indices
  reject(missing, "tensor 't' is incomplete: 4 of 8 bytes arrived");
  auto extra = TopKPieces("t", {2, 3}, {1, 4}, {1.0F, 2.0F}, 64);
  extra[0].mutable_data()->append(4, '\0');
  reject(extra, "tensor 't': 4 bytes past its end");
  auto ragged = TopKPieces("t", {2, 3}, {1, 4}, {1.0F, 2.0F}, 64);
  ragged[0].mutable_data()->resize(6);
  reject(ragged, "TOPK tensor 't': a piece of 6 bytes, not a whole number of float32 values");
}

}  // namespace
}  // namespace autodist::rpc
