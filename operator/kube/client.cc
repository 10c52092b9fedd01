#include "operator/kube/client.h"

#include "operator/kube/api_error.h"
#include "operator/kube/http_transport.h"
#include "operator/kube/url.h"
#include "runtime/common/error.h"

namespace autodist::kube {
namespace {

// The reason client-go infers when a failure carries no Status (a proxy's 503, say).
std::string ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

std::string MetadataField(const nlohmann::json& object, const char* field) {
  const auto& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json();
  if (!meta.is_object() || !meta.contains(field) || !meta[field].is_string()) return "";
  return meta[field].get<std::string>();
}

}  // namespace

void ThrowApiError(const std::string& what, int http_code, const std::string& body,
                   const std::string& retry_after) {
  ApiStatus status;
  status.code = http_code;
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status") {
    status.reason = parsed.value("reason", "");
    status.message = parsed.value("message", "");
    if (parsed.contains("code") && parsed["code"].is_number_integer()) status.code = parsed["code"];
    if (parsed.contains("details") && parsed["details"].is_object()) {
      status.retry_after_seconds = parsed["details"].value("retryAfterSeconds", 0);
    }
  } else {
    status.message = body.size() > 200 ? body.substr(0, 200) + "..." : body;
  }
  if (status.reason.empty()) status.reason = ReasonForCode(status.code);
  if (!retry_after.empty() && status.retry_after_seconds == 0) {
    status.retry_after_seconds = std::atoi(retry_after.c_str());
  }
  throw ApiError(what, std::move(status));
}

Client::Client(Config config, ClientOptions options)
    : config_(std::move(config)),
      options_(std::move(options)),
      transport_(std::make_unique<HttpTransport>(config_, options_.request_timeout,
                                                 options_.user_agent)) {}

Client::~Client() = default;

void Client::Observe(const std::string& verb, const Resource& r, int code,
                     std::chrono::steady_clock::time_point start) {
  if (options_.observer) options_.observer(verb, r, code, std::chrono::steady_clock::now() - start);
}

nlohmann::json Client::Call(const std::string& verb, const Resource& r, const std::string& method,
                            const std::string& path, const std::string& body,
                            const std::string& content_type) {
  const auto start = std::chrono::steady_clock::now();
  HttpResult result;
  try {
    result = transport_->Send(method, path, body, content_type);
  } catch (const Error&) {
    Observe(verb, r, 0, start);
    throw;
  }
  Observe(verb, r, result.status, start);
  const std::string what = method + " " + path;
  if (result.status < 200 || result.status >= 300) {
    ThrowApiError(what, result.status, result.body, result.retry_after);
  }
  nlohmann::json parsed = nlohmann::json::parse(result.body, nullptr, false);
  AD_CHECK(!parsed.is_discarded(), kUnavailable, "{}: the API server answered {} with non-JSON: {}",
           what, result.status, result.body.substr(0, 200));
  return parsed;
}

nlohmann::json Client::Get(const Resource& r, const std::string& ns, const std::string& name) {
  return Call("get", r, "GET", r.Path(ns, name));
}

nlohmann::json Client::List(const Resource& r, const std::string& ns, const ListOptions& options) {
  Query query;
  query.Add("labelSelector", options.label_selector)
      .Add("fieldSelector", options.field_selector)
      .Add("resourceVersion", options.resource_version)
      .Add("limit", options.limit > 0 ? std::to_string(options.limit) : "")
      .Add("continue", options.continue_token);
  return Call("list", r, "GET", r.Path(ns) + query.str());
}

nlohmann::json Client::ListAll(const Resource& r, const std::string& ns, ListOptions options) {
  nlohmann::json all = List(r, ns, options);
  if (!all.contains("items") || all["items"].is_null()) all["items"] = nlohmann::json::array();
  // A continue token pins later pages to the first page's snapshot; resourceVersion must not be
  // sent with it.
  options.resource_version.clear();
  for (std::string token = MetadataField(all, "continue"); !token.empty();) {
    options.continue_token = token;
    nlohmann::json page = List(r, ns, options);
    for (auto& item : page.value("items", nlohmann::json::array())) {
      all["items"].push_back(std::move(item));
    }
    token = MetadataField(page, "continue");
  }
  if (all.contains("metadata") && all["metadata"].is_object()) all["metadata"].erase("continue");
  return all;
}

nlohmann::json Client::Create(const Resource& r, const std::string& ns,
                              const nlohmann::json& object) {
  return Call("create", r, "POST", r.Path(ns), object.dump());
}

nlohmann::json Client::Update(const Resource& r, const nlohmann::json& object) {
  const std::string name = MetadataField(object, "name");
  AD_CHECK(!name.empty(), kInvalidArgument, "update of {}: the object has no metadata.name",
           r.Name());
  return Call("update", r, "PUT", r.Path(MetadataField(object, "namespace"), name), object.dump());
}

nlohmann::json Client::UpdateStatus(const Resource& r, const nlohmann::json& object) {
  const std::string name = MetadataField(object, "name");
  AD_CHECK(!name.empty(), kInvalidArgument, "status update of {}: the object has no metadata.name",
           r.Name());
  return Call("update", r, "PUT", r.Path(MetadataField(object, "namespace"), name, "status"),
              object.dump());
}

nlohmann::json Client::Patch(const Resource& r, const std::string& ns, const std::string& name,
                             const nlohmann::json& merge_patch, bool status) {
  return Call("patch", r, "PATCH", r.Path(ns, name, status ? "status" : ""), merge_patch.dump(),
              "application/merge-patch+json");
}

nlohmann::json Client::Delete(const Resource& r, const std::string& ns, const std::string& name,
                              const DeleteOptions& options) {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (options.precondition_uid) body["preconditions"]["uid"] = *options.precondition_uid;
  if (options.precondition_resource_version) {
    body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  return Call("delete", r, "DELETE", r.Path(ns, name), body.dump());
}

}  // namespace autodist::kube
