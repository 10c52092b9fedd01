#include "runtime/config/yaml_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/config/config_test_util.h"

namespace autodist::config {
namespace {

using ::testing::HasSubstr;

TEST(YamlReaderTest, ErrorsCarryTheFileTheLineAndThePath) {
  const std::vector<YAML::Node> documents =
      LoadYamlDocuments("top:\n  count: two\n  flag: yes\n", "a.yaml");
  ASSERT_EQ(documents.size(), 1U);
  ParseContext context("a.yaml");
  const MapReader top(context, documents[0], "", {"top"});
  const MapReader inner(context, top.Require("top"), top.PathOf("top"), {"count", "flag", "size"});
  EXPECT_EQ(inner.Bool("flag"), true);
  EXPECT_EQ(MessageOf([&] { inner.Int("count", 1, 10); }),
            "a.yaml:2: top.count: expected an integer >= 1, got \"two\"");
  EXPECT_EQ(MessageOf([&] { inner.Require("size"); }),
            "a.yaml:1: top.size: required field is missing");
  EXPECT_EQ(MessageOf([&] { ReadNumber(context, inner.Require("count"), "top.count"); }),
            "a.yaml:2: top.count: expected a number, got \"two\"");
}

TEST(YamlReaderTest, UnknownAndRepeatedFieldsAreRefused) {
  ParseContext context("b.yaml");
  const auto unknown = LoadYamlDocuments("nodes: []\nsssh: {}\n", "b.yaml");
  EXPECT_EQ(MessageOf([&] {
              MapReader(context, unknown[0], "", {"nodes", "ssh"});
            }),
            "b.yaml:2: sssh: unknown field (expected one of: nodes, ssh)");
  const auto repeated = LoadYamlDocuments("a: 1\na: 2\n", "b.yaml");
  EXPECT_THAT(MessageOf([&] { MapReader(context, repeated[0], ""); }),
              HasSubstr("a: field appears twice"));
}

TEST(YamlReaderTest, InvalidYamlIsLocated) {
  const std::string message = MessageOf([] { LoadYamlDocuments("a: [1, 2\n", "c.yaml"); });
  EXPECT_THAT(message, ::testing::StartsWith("c.yaml:"));
  EXPECT_THAT(message, HasSubstr(": invalid YAML: "));
}

TEST(YamlReaderTest, LocationWithoutLinesOrPath) {
  const ParseContext context("resource spec code");
  EXPECT_EQ(context.Location("nodes"), "resource spec code: nodes: ");
  EXPECT_EQ(context.Location(""), "resource spec code: ");
}

TEST(YamlReaderTest, TextThatIsNotUtf8IsRefusedNamingTheLineAndColumn) {
  // yaml-cpp reads such bytes without a word and writes them back as U+FFFD (the fuzzer's find).
  try {
    LoadYamlDocuments("a: 1\nname: caf\xe9\n", "job.yaml");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "job.yaml:2:10: invalid YAML: byte 0xe9 is not UTF-8 text");
  }
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80", "\xe2\x82"}) {
    EXPECT_THROW(LoadYamlDocuments(std::string("k: ") + bad, "x.yaml"), Error) << bad;
  }
  // Every plane of Unicode is fine.
  EXPECT_EQ(
      LoadYamlDocuments("k: \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n", "x.yaml")[0]["k"]
          .as<std::string>(),
      "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST(YamlReaderTest, AStrayCommaIsAnErrorNotEndlessDocuments) {
  // yaml-cpp 0.7's LoadAll finds empty documents at "," forever (the fuzzer's find).
  try {
    LoadYamlDocuments(",\n", "job.yaml");
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(error.what(), HasSubstr("job.yaml: invalid YAML: more than 1000 documents"));
  }
  // Several documents of a real file are all read.
  EXPECT_EQ(LoadYamlDocuments("a: 1\n---\nb: 2\n---\nc: 3\n", "m.yaml").size(), 3U);
}

}  // namespace
}  // namespace autodist::config
