// The precision names of the manifest and the runtime's --precision: fp32 and tf32 parse, and
// anything else (bf16 with its own reason) is an error naming the field.
#include "runtime/ops/precision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::ops {
namespace {

TEST(PrecisionTest, NamesRoundTrip) {
  for (const Precision precision : {Precision::kFp32, Precision::kTf32}) {
    EXPECT_EQ(ParsePrecision(PrecisionName(precision), "--precision"), precision);
  }
  EXPECT_EQ(PrecisionName(Precision::kTf32), "tf32");
}

TEST(PrecisionTest, OtherNamesAreRefusedNamingTheField) {
  const Error unknown = autodist::testing::ErrorOf([] { ParsePrecision("FP32", "--precision"); });
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_STREQ(unknown.what(), "--precision: expected fp32 or tf32, got \"FP32\"");
  const Error bf16 = autodist::testing::ErrorOf([] { ParsePrecision("bf16", "--precision"); });
  EXPECT_THAT(bf16.what(), ::testing::HasSubstr("--precision: bf16 mixed precision is not built "
                                                "yet (docs/gpu.md); expected fp32 or tf32"));
  EXPECT_FALSE(FindPrecision("").has_value());
}

}  // namespace
}  // namespace autodist::ops
