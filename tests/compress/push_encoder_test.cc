// Compressed parameter-server pushes on the worker's side: each push is compressed by its
// compressor's registered push form, with one error-feedback residual per (replica stream,
// tensor), and pushes a parameter server cannot take are refused before anything is sent.
#include "runtime/compress/push_encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "runtime/common/error.h"
#include "runtime/tensor/float16.h"

namespace autodist::compress {
namespace {

using tensor::Tensor;
using ::testing::HasSubstr;

Tensor Floats(const std::vector<float>& values) {
  return Tensor::FromVector<float>({static_cast<int64_t>(values.size())}, values);
}

Error ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "no error";
  return {ErrorCode::kInternal, "no error"};
}

TEST(PushEncoderTest, Float16WithFeedbackKeepsOneResidualPerStream) {
  PushEncoder encoder;
  const Tensor g = Floats({1.0F + 0x1p-12F, 2.0F});
  EncodedPush out;
  encoder.Encode("push", 0, "w", g, {.kind = CompressorKind::kHorovodEF}, out);
  EXPECT_EQ(out.form, EncodedPush::Form::kHalves);
  ASSERT_EQ(out.halves.size(), 2U);
  EXPECT_EQ(tensor::HalfToFloat(out.halves[0]), 1.0F);
  EXPECT_EQ(*encoder.Residual(0, "w"), (std::vector<float>{0x1p-12F, 0.0F}));
  EXPECT_FALSE(encoder.Residual(1, "w").has_value());  // another replica stream: its own
  encoder.Encode("push", 1, "w", g, {.kind = CompressorKind::kHorovodEF}, out);
  EXPECT_EQ(*encoder.Residual(1, "w"), (std::vector<float>{0x1p-12F, 0.0F}));
}

TEST(PushEncoderTest, Float16WithoutFeedbackKeepsNoState) {
  PushEncoder encoder;
  EncodedPush out;
  encoder.Encode("push", 0, "w", Floats({3.0F}), {.kind = CompressorKind::kHorovod}, out);
  EXPECT_EQ(tensor::HalfToFloat(out.halves.at(0)), 3.0F);
  EXPECT_FALSE(encoder.Residual(0, "w").has_value());
}

TEST(PushEncoderTest, TopKSendsTheLargestAndFeedsBackTheRest) {
  PushEncoder encoder;
  EncodedPush out;
  const CompressorOptions options{.kind = CompressorKind::kTopKEF, .fraction = 0.5};
  encoder.Encode("push", 0, "w", Floats({0.5F, -3.0F, 1.0F, 2.0F}), options, out);
  EXPECT_EQ(out.form, EncodedPush::Form::kTopK);
  EXPECT_EQ(out.indices, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(out.values, (std::vector<float>{-3.0F, 2.0F}));
  EXPECT_EQ(*encoder.Residual(0, "w"), (std::vector<float>{0.5F, 0.0F, 1.0F, 0.0F}));
}

TEST(PushEncoderTest, RefusesWhatAServerCannotTake) {
  PushEncoder encoder;
  EncodedPush out;
  const Error powersgd = ErrorOf([&] {
    encoder.Encode("push to ps-0", 0, "w", Floats({1.0F}), {.kind = CompressorKind::kPowerSGD},
                   out);
  });
  EXPECT_EQ(powersgd.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(powersgd.what(), HasSubstr("push to ps-0: gradient 'w' is to be pushed with "
                                         "PowerSGDCompressor, which needs an all-reduce"));
  const Error fraction = ErrorOf([&] {
    encoder.Encode("push", 0, "w", Floats({1.0F}),
                   {.kind = CompressorKind::kTopKEF, .fraction = 1.5}, out);
  });
  EXPECT_THAT(fraction.what(), HasSubstr("TopKCompressorEF fraction must be in (0, 1], got 1.5"));
  const Error ints = ErrorOf([&] {
    encoder.Encode("push", 0, "ids", Tensor::FromVector<int64_t>({1}, {4}),
                   {.kind = CompressorKind::kHorovod}, out);
  });
  EXPECT_THAT(ints.what(), HasSubstr("gradient 'ids' is int64; HorovodCompressor compresses "
                                     "float32 gradients only"));
}

TEST(PushEncoderTest, ATensorThatChangesSizeIsRefused) {
  PushEncoder encoder;
  EncodedPush out;
  encoder.Encode("push", 0, "w", Floats({1.0F, 2.0F}), {.kind = CompressorKind::kHorovodEF}, out);
  const Error error = ErrorOf([&] {
    encoder.Encode("push", 0, "w", Floats({1.0F}), {.kind = CompressorKind::kHorovodEF}, out);
  });
  EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
  EXPECT_THAT(error.what(), HasSubstr("gradient 'w' of replica 0 has 1 elements; its "
                                      "error-feedback residual has 2"));
}

}  // namespace
}  // namespace autodist::compress
