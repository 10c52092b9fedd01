// The compressor registry: every compressor is found by kind and by the Strategy's wire value,
// carries its name and whether a parameter server can take its pushes; what is not registered is
// an error that lists what is.
#include "runtime/compress/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"

namespace autodist::compress {
namespace {

using ::testing::HasSubstr;

TEST(CompressorRegistryTest, EveryKindIsRegisteredWithItsWireValueAndName) {
  const struct {
    CompressorKind kind;
    int wire;
    const char* name;
    bool pushes;
    bool error_feedback;
  } expected[] = {
      {CompressorKind::kNone, 0, "NoneCompressor", true, false},
      {CompressorKind::kHorovod, 1, "HorovodCompressor", true, false},
      {CompressorKind::kHorovodEF, 2, "HorovodCompressorEF", true, true},
      {CompressorKind::kPowerSGD, 3, "PowerSGDCompressor", false, false},
      {CompressorKind::kTopKEF, 4, "TopKCompressorEF", true, true},
  };
  for (const auto& want : expected) {
    const CompressorRegistration& found = FindCompressor(want.kind);
    EXPECT_STREQ(found.name, want.name);
    EXPECT_EQ(found.pushes, want.pushes) << want.name;
    EXPECT_EQ(found.error_feedback, want.error_feedback) << want.name;
    // NoneCompressor's pushes travel unencoded; the lossy ones with a push form encode.
    EXPECT_EQ(found.encode_push != nullptr, want.pushes && want.kind != CompressorKind::kNone)
        << want.name;
    EXPECT_EQ(CompressorKindOfWireValue(want.wire, "strategy: w"), want.kind);
    EXPECT_NE(found.make({.kind = want.kind}), nullptr);
  }
  EXPECT_EQ(RegisteredCompressorNames(),
            "NoneCompressor, HorovodCompressor, HorovodCompressorEF, PowerSGDCompressor, "
            "TopKCompressorEF");
}

TEST(CompressorRegistryTest, UnknownKindsAreErrorsListingTheRegisteredOnes) {
  try {
    CompressorKindOfWireValue(9, "strategy: variable 'w'");
    ADD_FAILURE() << "wire value 9 accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("strategy: variable 'w' has an unknown compressor value 9; "
                                        "expected one of NoneCompressor, HorovodCompressor"));
  }
  try {
    FindCompressor(static_cast<CompressorKind>(7));
    ADD_FAILURE() << "kind 7 found";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("no compressor of kind 7 is registered"));
  }
}

TEST(CompressorRegistryTest, ASecondRegistrationOfAKindIsABug) {
  try {
    CompressorRegistration twice;
    twice.kind = CompressorKind::kNone;
    twice.name = "Twice";
    RegisterCompressor(twice);
    ADD_FAILURE() << "registered twice";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInternal);
  }
  EXPECT_STREQ(CompressorName(CompressorKind::kNone), "NoneCompressor");
}

}  // namespace
}  // namespace autodist::compress
