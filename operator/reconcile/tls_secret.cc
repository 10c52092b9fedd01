#include "operator/reconcile/tls_secret.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "operator/reconcile/names.h"
#include "operator/reconcile/object_meta.h"
#include "operator/reconcile/observed_fields.h"
#include "runtime/common/base64.h"
#include "runtime/common/error.h"
#include "runtime/security/certificate_authority.h"

namespace autodist::reconcile {
namespace {

const std::string kCaKeyKey = "ca.key";

std::string CertificateKey(const std::string& member) { return member + ".crt"; }
std::string PrivateKeyKey(const std::string& member) { return member + ".key"; }

std::optional<std::string> DataOf(const nlohmann::json& secret, const std::string& key) {
  const auto data = secret.find("data");
  if (data == secret.end() || !data->is_object()) return std::nullopt;
  const auto value = data->find(key);
  if (value == data->end() || !value->is_string()) return std::nullopt;
  return DecodeBase64(value->get<std::string>());
}

}  // namespace

nlohmann::json BuildTlsSecret(const JobRef& ref, const JobMembers& members,
                              const JobTlsOptions& options) {
  const security::Validity validity = security::Validity::For(options.lifetime);
  const security::CertificateAuthority authority = security::CertificateAuthority::Create(
      fmt::format("{}/{}", ref.namespace_name, ref.name), validity);
  nlohmann::json data = nlohmann::json::object();
  data[security::kCaFile] = EncodeBase64(authority.certificate());
  // Kept so that the CA could sign again; no pod mounts it (TlsVolume).
  data[kCaKeyKey] = EncodeBase64(authority.key());
  const auto add = [&](const std::string& member) {
    const security::JobCredentials issued = authority.Issue(member, validity);
    data[CertificateKey(member)] = EncodeBase64(issued.certificate);
    data[PrivateKeyKey(member)] = EncodeBase64(issued.key);
  };
  for (const Member& member : members.members) add(member.node);
  add(kOperatorMember);
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", ChildMetadata(ref, TlsSecretName(ref.name))},
          {"type", "Opaque"},
          {"data", std::move(data)}};
}

nlohmann::json SlimTlsSecret(const nlohmann::json& secret) {
  nlohmann::json slim = SlimToMetadata(secret);
  const auto data = secret.find("data");
  if (data == secret.end() || !data->is_object()) return slim;
  nlohmann::json& kept = slim["data"] = nlohmann::json::object();
  const std::array<std::string, 3> keep = {security::kCaFile, CertificateKey(kOperatorMember),
                                           PrivateKeyKey(kOperatorMember)};
  for (const auto& [key, value] : data->items()) {
    const bool needed = std::find(keep.begin(), keep.end(), key) != keep.end();
    kept[key] = needed ? value : nlohmann::json("");
  }
  return slim;
}

std::shared_ptr<const security::JobCredentials> OperatorCredentials(const nlohmann::json& secret) {
  security::JobCredentials credentials;
  const std::optional<std::string> ca = DataOf(secret, security::kCaFile);
  const std::optional<std::string> certificate = DataOf(secret, CertificateKey(kOperatorMember));
  const std::optional<std::string> key = DataOf(secret, PrivateKeyKey(kOperatorMember));
  if (!ca || !certificate || !key) return nullptr;
  credentials.ca = *ca;
  credentials.certificate = *certificate;
  credentials.key = *key;
  try {
    return std::make_shared<const security::JobCredentials>(
        security::CheckedCredentials(std::move(credentials), "the job's TLS Secret"));
  } catch (const Error&) {
    return nullptr;
  }
}

nlohmann::json TlsVolume(const JobRef& ref, const Member& member) {
  const nlohmann::json items = nlohmann::json::array(
      {{{"key", security::kCaFile}, {"path", security::kCaFile}},
       {{"key", CertificateKey(member.node)}, {"path", security::kCertificateFile}},
       {{"key", PrivateKeyKey(member.node)}, {"path", security::kKeyFile}}});
  // 0440: the runtime's user reads it through the pod's fsGroup; nobody else in the pod can.
  return {{"name", kTlsVolume},
          {"secret",
           {{"secretName", TlsSecretName(ref.name)}, {"items", items}, {"defaultMode", 0440}}}};
}

std::string TlsMountPath(const JobTlsOptions& options, const Member& member) {
  // A directory per member: pods that share one host (the end-to-end tests' processes) must not
  // see each other's keys under the same path.
  return options.mount_path + "/" + member.node;
}

}  // namespace autodist::reconcile
