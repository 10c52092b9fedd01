#include "launcher/netemu/link_rate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/common/error.h"
#include "tests/error_of.h"

namespace autodist::netemu {
namespace {

using autodist::testing::ErrorOf;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(LinkRateTest, ReadsTcUnitsAndUnshaped) {
  EXPECT_EQ(ParseLinkRate("100mbit", "--rate"), 100'000'000);
  EXPECT_EQ(ParseLinkRate("1gbit", "--rate"), 1'000'000'000);
  EXPECT_EQ(ParseLinkRate("2.5gbit", "--rate"), 2'500'000'000);
  EXPECT_EQ(ParseLinkRate("25Gbit/s", "--rate"), 25'000'000'000);
  EXPECT_EQ(ParseLinkRate("64kbit", "--rate"), 64'000);
  EXPECT_EQ(ParseLinkRate("unshaped", "--rate"), std::nullopt);
  EXPECT_EQ(ParseLinkRate("Unshaped", "--rate"), std::nullopt);
}

TEST(LinkRateTest, RefusesWhatIsNotARateNamingTheFlag) {
  for (const std::string bad : {"1gb", "fast", "", "gbit", "1.5.3gbit", "1 gbit", "-1gbit"}) {
    EXPECT_THAT(ErrorOf([&] { ParseLinkRate(bad, "--network"); }).what(),
                AllOf(HasSubstr("--network"), HasSubstr("'" + bad + "'"), HasSubstr("1gbit")))
        << bad;
  }
  for (const std::string out_of_range : {"0mbit", "0.5kbit", "2000gbit"}) {
    EXPECT_THAT(ErrorOf([&] { ParseLinkRate(out_of_range, "--rate"); }).what(),
                AllOf(HasSubstr("--rate"), HasSubstr("out of range")))
        << out_of_range;
  }
}

TEST(LinkRateTest, FormatsForPeople) {
  EXPECT_EQ(FormatLinkRate(100'000'000), "100 Mbit/s");
  EXPECT_EQ(FormatLinkRate(2'500'000'000), "2.5 Gbit/s");
  EXPECT_EQ(FormatLinkRate(64'000), "64 kbit/s");
  EXPECT_EQ(FormatLinkRate(std::nullopt), "unshaped");
}

}  // namespace
}  // namespace autodist::netemu
