// The syntax Kubernetes requires of names, label keys and values and resource quantities, checked
// when a manifest is parsed so that `autodist run` and the operator reject what the API server
// would (apimachinery's validation rules).
#pragma once

#include <string>

namespace autodist::job {

// RFC 1035 label: lowercase letters, digits and '-', starts with a letter, ends with a letter or
// digit, at most 63 characters (Service names; our pod and service names derive from job names).
bool IsDns1035Label(const std::string& text);

// RFC 1123 label: like a DNS-1035 label but may start with a digit (namespaces).
bool IsDns1123Label(const std::string& text);

// RFC 1123 subdomain: dot-separated DNS-1123 labels, at most 253 characters (ConfigMap names).
bool IsDns1123Subdomain(const std::string& text);

// A ConfigMap data key: letters, digits, '-', '_' and '.', at most 253 characters, not "." or "..".
bool IsConfigMapKey(const std::string& text);

// A label or annotation key: an optional DNS-1123 subdomain prefix and '/', then a name of at most
// 63 characters made of alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
bool IsQualifiedName(const std::string& text);

// A label value: empty, or at most 63 characters with the same characters as a name.
bool IsLabelValue(const std::string& text);

// A non-negative resource quantity: a decimal number ("2", "1.5", ".5") followed by nothing, a
// binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (m k M G T P E) or an exponent ("1e9").
bool IsResourceQuantity(const std::string& text);

}  // namespace autodist::job
