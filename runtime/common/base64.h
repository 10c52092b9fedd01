// Base64 (RFC 4648, standard alphabet, padded), as the Kubernetes API encodes []byte fields
// (ConfigMap binaryData) and kubeconfig its *-data fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace autodist {

// The decoded bytes, or nullopt when `text` is not valid padded standard base64.
// Base64Whitespace::kSkip ignores spaces and line breaks first, as kubectl's decoders do for
// wrapped PEM blobs in a kubeconfig.
enum class Base64Whitespace { kReject, kSkip };
std::optional<std::string> DecodeBase64(std::string_view text,
                                        Base64Whitespace whitespace = Base64Whitespace::kReject);

std::string EncodeBase64(const std::string& bytes);

}  // namespace autodist
