// The precision names of the manifest and the runtime's --precision: fp32, tf32 and bf16 parse,
// and anything else is an error naming the field.
#include "runtime/ops/precision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::ops {
namespace {

TEST(PrecisionTest, NamesRoundTrip) {
  for (const Precision precision : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    EXPECT_EQ(ParsePrecision(PrecisionName(precision), "--precision"), precision);
  }
  EXPECT_EQ(PrecisionName(Precision::kTf32), "tf32");
  EXPECT_EQ(PrecisionName(Precision::kBf16), "bf16");
}

TEST(PrecisionTest, OtherNamesAreRefusedNamingTheField) {
  const Error unknown = autodist::testing::ErrorOf([] { ParsePrecision("FP32", "--precision"); });
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_STREQ(unknown.what(), "--precision: expected fp32, tf32 or bf16, got \"FP32\"");
  const Error fp16 = autodist::testing::ErrorOf([] { ParsePrecision("fp16", "--precision"); });
  EXPECT_STREQ(fp16.what(), "--precision: expected fp32, tf32 or bf16, got \"fp16\"");
  EXPECT_FALSE(FindPrecision("").has_value());
}

}  // namespace
}  // namespace autodist::ops
