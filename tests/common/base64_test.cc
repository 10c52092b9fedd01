// The one base64 codec: ConfigMap binaryData (strict) and kubeconfig *-data fields (wrapped PEM
// blobs, whitespace skipped).
#include "runtime/common/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace autodist {
namespace {

TEST(Base64Test, RoundTripsAndRejectsMalformedText) {
  for (const std::string& bytes :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    EXPECT_EQ(DecodeBase64(EncodeBase64(bytes)), bytes);
  }
  EXPECT_EQ(EncodeBase64("onnx"), "b25ueA==");
  EXPECT_EQ(DecodeBase64("b25ueA=="), "onnx");
  for (const char* bad : {"b25ue", "b25u*A==", "b2=ueA==", "b25ueA=a", "====", "b25ueA=\n"}) {
    EXPECT_FALSE(DecodeBase64(bad).has_value()) << bad;
  }
}

TEST(Base64Test, SkipsWhitespaceOnlyWhenAsked) {
  EXPECT_EQ(DecodeBase64("b25u\neA==\n", Base64Whitespace::kSkip), "onnx");
  EXPECT_EQ(DecodeBase64(" b2 5u eA = = ", Base64Whitespace::kSkip), "onnx");
  EXPECT_FALSE(DecodeBase64("b25u\neA==", Base64Whitespace::kReject).has_value());
  for (const char* bad : {"b25ue\n", "b2=u eA==", "b25ueA=a\n"}) {
    EXPECT_FALSE(DecodeBase64(bad, Base64Whitespace::kSkip).has_value()) << bad;
  }
}

}  // namespace
}  // namespace autodist
