// Base64 (RFC 4648, standard alphabet) decoding for kubeconfig's *-data fields.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace autodist::kube {

// The decoded bytes, or nullopt when `text` is not base64 (whitespace is skipped, as the
// decoders kubectl uses allow wrapped PEM blobs).
std::optional<std::string> DecodeBase64(std::string_view text);

}  // namespace autodist::kube
