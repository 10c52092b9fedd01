#include "runtime/comm/tensor_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "runtime/common/error.h"

namespace autodist::comm {
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
  ops::SparseGradient gradient;
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

}  // namespace
}  // namespace autodist::comm
