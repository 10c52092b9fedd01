// Base64 (RFC 4648, with padding) for opaque continue tokens.
#pragma once

#include <string>

namespace autodist::k8s {

std::string Base64Encode(const std::string& data);
// Decodes; characters outside the alphabet end the input (a bad token then fails to parse).
std::string Base64Decode(const std::string& text);

}  // namespace autodist::k8s
