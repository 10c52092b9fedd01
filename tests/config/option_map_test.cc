#include "runtime/config/option_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/config/config_test_util.h"

namespace autodist::config {
namespace {

using ::testing::HasSubstr;

TEST(OptionKeysTest, CamelCaseAndDashesBecomeSnakeCase) {
  EXPECT_EQ(SnakeCaseKey("weightDecay"), "weight_decay");
  EXPECT_EQ(SnakeCaseKey("lazy-sparse"), "lazy_sparse");
  EXPECT_EQ(SnakeCaseKey("chunk_size"), "chunk_size");
  EXPECT_EQ(SnakeCaseKey("warmup_StartFactor"), "warmup_start_factor");
  EXPECT_EQ(Lowercase("TopKCompressorEF"), "topkcompressoref");
  EXPECT_EQ(TrimSpace("  0.9 \t"), "0.9");
}

TEST(OptionKeysTest, FiniteNumbersOnly) {
  EXPECT_EQ(ParseFiniteNumber(" 1e-3 "), 1e-3);
  EXPECT_FALSE(ParseFiniteNumber("inf").has_value());
  EXPECT_FALSE(ParseFiniteNumber("nan").has_value());
  EXPECT_FALSE(ParseFiniteNumber("1.5x").has_value());
  EXPECT_FALSE(ParseFiniteNumber("").has_value());
}

TEST(OptionMapTest, ReadsTypedValuesUnderEitherSpelling) {
  OptionMap options("optimizer adam",
                    {{"weightDecay", "0.01"}, {"amsgrad", "Yes"}, {"warmup_steps", " 7 "}});
  EXPECT_TRUE(options.Has("weight_decay"));
  EXPECT_EQ(options.Number("weight_decay"), 0.01);
  EXPECT_EQ(options.Bool("amsgrad"), true);
  EXPECT_EQ(options.Int("warmup_steps"), 7);
  EXPECT_FALSE(options.Number("eps").has_value());
  EXPECT_EQ(options.values().size(), 3U);
}

TEST(OptionMapTest, ErrorsNameTheOwnerTheOptionAndWhatWasExpected) {
  EXPECT_EQ(MessageOf([] {
              OptionMap("builder PS", {{"sync", "Yes"}, {"Sync", "no"}});
            }),
            "builder PS: option 'sync' is given twice (as 'Sync' and 'sync')");
  OptionMap options("optimizer sgd", {{"lr", "fast"}, {"nesterov", "maybe"}, {"steps", "1.5"}});
  EXPECT_EQ(MessageOf([&] { options.Number("lr"); }),
            "optimizer sgd: option lr: expected a finite number, got 'fast'");
  EXPECT_EQ(MessageOf([&] { options.Bool("nesterov"); }),
            "optimizer sgd: option nesterov: expected true or false, got 'maybe'");
  EXPECT_EQ(MessageOf([&] { options.Int("steps"); }),
            "optimizer sgd: option steps: expected an integer, got '1.5'");
}

TEST(OptionMapTest, RejectsOptionsNobodyTakes) {
  const OptionMap options("optimizer sgd", {{"lr", "0.1"}, {"betaOne", "0.9"}});
  EXPECT_EQ(MessageOf([&] {
              options.RejectOthers({"lr", "momentum"});
            }),
            "optimizer sgd does not take option 'betaOne'; it takes: lr, momentum");
  EXPECT_THAT(MessageOf([&] { options.RejectOthers({}, "schedule of kind constant"); }),
              HasSubstr("schedule of kind constant takes no options, got "));
  options.RejectOthers({"lr", "beta_one"});  // both taken: no error
}

TEST(OptionMapTest, RejectUnreadListsWhatWasRead) {
  OptionMap options("builder AllReduce", {{"chunkSize", "4"}, {"sync", "true"}});
  EXPECT_EQ(options.Int("chunk_size"), 4);
  EXPECT_FALSE(options.Find("compressor"));
  EXPECT_EQ(MessageOf([&] { options.RejectUnread(); }),
            "builder AllReduce does not take option 'sync'; it takes: chunk_size, compressor");
  EXPECT_TRUE(options.Bool("sync").value());
  options.RejectUnread();
}

}  // namespace
}  // namespace autodist::config
