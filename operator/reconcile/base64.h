// Base64 as the Kubernetes API encodes []byte fields (ConfigMap binaryData): the standard
// alphabet with padding.
#pragma once

#include <optional>
#include <string>

namespace autodist::reconcile {

// The decoded bytes, or nullopt when `text` is not valid padded standard base64.
std::optional<std::string> DecodeBase64(const std::string& text);

std::string EncodeBase64(const std::string& bytes);

}  // namespace autodist::reconcile
