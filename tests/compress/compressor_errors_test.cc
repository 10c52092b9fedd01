// Bad input: every compressor rejects undefined, non-float32, unnamed and duplicate gradients
// naming the compressor, the group and the tensor; bad options and a tensor changing size between
// steps are errors too. Also the factory's names and types.
#include <gtest/gtest.h>

#include <array>

#include "runtime/common/error.h"
#include "runtime/compress/compressor.h"
#include "runtime/compress/horovod_compressor.h"
#include "runtime/compress/none_compressor.h"
#include "runtime/compress/powersgd_compressor.h"
#include "runtime/compress/topk_compressor.h"
#include "tests/compress/compress_test_util.h"
#include "tests/compress/thread_communicator.h"

namespace autodist::compress::testing {
namespace {

const std::array<CompressorKind, 5> kKinds = {CompressorKind::kNone, CompressorKind::kHorovod,
                                              CompressorKind::kHorovodEF, CompressorKind::kPowerSGD,
                                              CompressorKind::kTopKEF};

// Runs Reduce on one rank and returns the error it throws.
Error ReduceError(CompressorKind kind, const std::vector<NamedGradient>& gradients) {
  try {
    RunRanks(1, [&](ThreadCommunicator& comm) {
      MakeCompressor({.kind = kind})->Reduce("group-7", gradients, comm, 0);
    });
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << CompressorName(kind) << " accepted bad input";
  return {ErrorCode::kInternal, ""};
}

void ExpectMentions(const Error& error, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts) {
    EXPECT_NE(std::string(error.what()).find(part), std::string::npos)
        << "'" << error.what() << "' does not mention '" << part << "'";
  }
}

TEST(CompressorErrorsTest, RejectsGradientsThatAreNotFloat32) {
  for (const CompressorKind kind : kKinds) {
    tensor::Tensor good = MakeTensor({4, 4}, std::vector<float>(16, 1.0F));
    tensor::Tensor ints = tensor::Tensor::FromVector<int64_t>({2}, {1, 2});
    const Error error = ReduceError(kind, {{"good", &good}, {"layer/ids", &ints}});
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    ExpectMentions(error, {CompressorName(kind), "group 'group-7'", "'layer/ids'", "int64",
                           "expected float32"});
  }
}

TEST(CompressorErrorsTest, RejectsUndefinedAndMissingGradients) {
  for (const CompressorKind kind : kKinds) {
    tensor::Tensor undefined;
    Error error = ReduceError(kind, {{"w", &undefined}});
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    ExpectMentions(error, {"group 'group-7'", "'w'", "undefined"});
    error = ReduceError(kind, {{"null", nullptr}});
    ExpectMentions(error, {"group 'group-7'", "'null'", "undefined"});
  }
}

TEST(CompressorErrorsTest, RejectsDuplicateAndEmptyNames) {
  for (const CompressorKind kind : kKinds) {
    tensor::Tensor a = MakeTensor({2}, {1, 2});
    tensor::Tensor b = MakeTensor({2}, {3, 4});
    Error error = ReduceError(kind, {{"w", &a}, {"w", &b}});
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    ExpectMentions(error, {"group 'group-7'", "'w' appears more than once"});
    error = ReduceError(kind, {{"", &a}});
    ExpectMentions(error, {"group 'group-7'", "gradient #0 has an empty name"});
  }
}

TEST(CompressorErrorsTest, ATensorMayNotChangeSizeBetweenSteps) {
  for (const CompressorKind kind :
       {CompressorKind::kHorovodEF, CompressorKind::kPowerSGD, CompressorKind::kTopKEF}) {
    try {
      RunRanks(1, [&](ThreadCommunicator& comm) {
        const auto compressor = MakeCompressor({.kind = kind});
        tensor::Tensor first = MakeTensor({8, 8}, std::vector<float>(64, 1.0F));
        compressor->Reduce("g", {{"w", &first}}, comm, 0);
        tensor::Tensor second = MakeTensor({8, 9}, std::vector<float>(72, 1.0F));
        compressor->Reduce("g", {{"w", &second}}, comm, 1);
      });
      ADD_FAILURE() << CompressorName(kind);
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kFailedPrecondition);
      ExpectMentions(error, {CompressorName(kind), "group 'g'", "'w'", "72", "64"});
    }
  }
}

TEST(CompressorErrorsTest, RejectsOptionsOutOfRange) {
  const auto expect_invalid = [](const CompressorOptions& options, const std::string& part) {
    try {
      MakeCompressor(options);
      ADD_FAILURE() << "accepted: " << part;
    } catch (const Error& error) {
      EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
      ExpectMentions(error, {CompressorName(options.kind), part});
    }
  };
  expect_invalid({.kind = CompressorKind::kPowerSGD, .rank = 0}, "rank must be at least 1, got 0");
  expect_invalid({.kind = CompressorKind::kPowerSGD, .start_step = -1}, "start_step");
  expect_invalid({.kind = CompressorKind::kPowerSGD, .min_compression_elements = -5},
                 "min_compression_elements");
  expect_invalid({.kind = CompressorKind::kTopKEF, .fraction = 0}, "fraction must be in (0, 1]");
  expect_invalid({.kind = CompressorKind::kTopKEF, .fraction = 1.5}, "got 1.5");
  try {
    MakeCompressor({.kind = static_cast<CompressorKind>(42)});
    ADD_FAILURE() << "accepted an unknown kind";
  } catch (const Error& error) {
    ExpectMentions(
        error, {"no compressor of kind 42 is registered", "PowerSGDCompressor, TopKCompressorEF"});
  }
}

TEST(CompressorErrorsTest, FactoryNamesAndTypes) {
  EXPECT_STREQ(CompressorName(CompressorKind::kNone), "NoneCompressor");
  EXPECT_STREQ(CompressorName(CompressorKind::kHorovod), "HorovodCompressor");
  EXPECT_STREQ(CompressorName(CompressorKind::kHorovodEF), "HorovodCompressorEF");
  EXPECT_STREQ(CompressorName(CompressorKind::kPowerSGD), "PowerSGDCompressor");
  EXPECT_STREQ(CompressorName(CompressorKind::kTopKEF), "TopKCompressorEF");
  EXPECT_NE(dynamic_cast<NoneCompressor*>(MakeCompressor({}).get()), nullptr);
  EXPECT_NE(
      dynamic_cast<HorovodCompressor*>(MakeCompressor({.kind = CompressorKind::kHorovodEF}).get()),
      nullptr);
  EXPECT_NE(
      dynamic_cast<PowerSGDCompressor*>(MakeCompressor({.kind = CompressorKind::kPowerSGD}).get()),
      nullptr);
  EXPECT_NE(
      dynamic_cast<TopKCompressorEF*>(MakeCompressor({.kind = CompressorKind::kTopKEF}).get()),
      nullptr);
}

}  // namespace
}  // namespace autodist::compress::testing
