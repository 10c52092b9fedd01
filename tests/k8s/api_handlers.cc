// The verb handlers of ApiServer: get, list, watch, create/update/patch, delete and
// deletecollection, with the response shapes kubectl and client-go expect.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "tests/k8s/api_error.h"
#include "tests/k8s/api_server.h"
#include "tests/k8s/protobuf_body.h"
#include "tests/k8s/table.h"

namespace autodist::k8s {
namespace {

std::string Param(const std::map<std::string, std::string>& query, const char* key) {
  auto it = query.find(key);
  return it == query.end() ? std::string() : it->second;
}

uint64_t ParseRv(const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') {
    FailApi(400, "BadRequest", "invalid resource version \"{}\": expected a decimal number", text);
  }
  return value;
}

long ParseNonNegative(const std::string& text, const char* name) {
  if (text.empty()) return 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (*end != '\0' || value < 0) {
    FailApi(400, "BadRequest", "{}: expected a non-negative integer, got \"{}\"", name, text);
  }
  return value;
}

// gracePeriodSeconds, in the query: any integer (a negative one counts as 1 s, store_delete.cc).
int64_t ParseGracePeriod(const std::string& text) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0') {
    FailApi(400, "BadRequest", "gracePeriodSeconds: expected an integer, got \"{}\"", text);
  }
  return value;
}

Propagation ParsePropagation(const std::string& text) {
  if (text.empty() || text == "Background") return Propagation::kBackground;
  if (text == "Foreground") return Propagation::kForeground;
  if (text == "Orphan") return Propagation::kOrphan;
  FailApi(400, "BadRequest",
          "propagationPolicy: Unsupported value: \"{}\": supported values: \"Foreground\", "
          "\"Background\", \"Orphan\"",
          text);
}

// The last `n` lines of `text` (a final line without a newline counts).
std::string TailLines(const std::string& text, long n) {
  if (n == 0) return "";
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') --end;  // the last line's own newline
  size_t pos = end;
  long lines = 0;
  while (pos > 0) {
    if (text[pos - 1] == '\n' && ++lines == n) break;
    --pos;
  }
  return text.substr(pos);
}

nlohmann::json WithVersion(const nlohmann::json& object, const ResourceInfo& r) {
  nlohmann::json copy = object;
  copy["apiVersion"] = r.ApiVersion();
  return copy;
}

}  // namespace

bool ApiServer::MultiVersion(const ResourceInfo& r) const {
  if (!r.is_custom) return false;
  return store_.VersionCount(r.Key()) > 1;
}

std::string ApiServer::Render(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                              const ObjectPtr& object) {
  const Negotiated n = NegotiateAccept(request.Header("accept"));
  if (n.format == OutputFormat::kTable) {
    return TableConverter(r, Param(query, "includeObject"), n.version)
        .Table({object}, object->rv, "")
        .dump();
  }
  if (n.format == OutputFormat::kPartialMetadata) {
    return PartialMetadata(object->object, n.version).dump();
  }
  if (object->object.value("apiVersion", "") == r.ApiVersion()) return object->json;
  return WithVersion(object->object, r).dump();
}

HttpResponse ApiServer::GetObject(const HttpRequest& request, const Query& query,
                                  const ResourceInfo& r, const RequestAttributes& a) {
  const ObjectPtr object = store_.Get(r, a.ns, a.name);
  if (object == nullptr) NotFound(r, a.name);
  HttpResponse response;
  response.body = Render(request, query, r, object);
  return response;
}

HttpResponse ApiServer::ListObjects(const HttpRequest& request, const Query& query,
                                    const ResourceInfo& r, const RequestAttributes& a) {
  const auto labels = LabelSelector::Parse(Param(query, "labelSelector"));
  const auto fields = FieldSelector::Parse(Param(query, "fieldSelector"), r);
  const ListResult list =
      store_.List(r, a.ns, labels, fields, ParseNonNegative(Param(query, "limit"), "limit"),
                  Param(query, "continue"));
  HttpResponse response;
  const Negotiated n = NegotiateAccept(request.Header("accept"));
  if (n.format == OutputFormat::kTable) {
    response.body = TableConverter(r, Param(query, "includeObject"), n.version)
                        .Table(list.items, list.rv, list.continue_token)
                        .dump();
    return response;
  }
  nlohmann::json meta = {{"resourceVersion", std::to_string(list.rv)}};
  if (!list.continue_token.empty()) meta["continue"] = list.continue_token;
  if (n.format == OutputFormat::kPartialMetadata) {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : list.items) items.push_back(PartialMetadata(item->object, n.version));
    response.body = nlohmann::json{
        {"kind", "PartialObjectMetadataList"},
        {"apiVersion", "meta.k8s.io/" + n.version},
        {"metadata", meta},
        {"items",
         items}}.dump();
    return response;
  }
  // Items are spliced in as stored: a list of thousands of pods is not re-encoded.
  std::string body = fmt::format(R"({{"kind":"{}List","apiVersion":"{}","metadata":{},"items":[)",
                                 r.kind, r.ApiVersion(), meta.dump());
  bool first = true;
  for (const auto& item : list.items) {
    if (!first) body += ',';
    first = false;
    if (item->object.value("apiVersion", "") == r.ApiVersion()) {
      body += item->json;
    } else {
      body += WithVersion(item->object, r).dump();
    }
  }
  body += "]}";
  response.body = std::move(body);
  return response;
}

HttpResponse ApiServer::WatchObjects(const HttpRequest& request, const Query& query,
                                     const ResourceInfo& r, const RequestAttributes& a) {
  WatchOptions options;
  options.ns = a.ns;
  options.labels = LabelSelector::Parse(Param(query, "labelSelector"));
  std::string field_selector = Param(query, "fieldSelector");
  if (!a.name.empty()) {  // a watch on one object: /watch/.../<name> or GET <name>?watch=1
    field_selector += (field_selector.empty() ? "" : ",") + ("metadata.name=" + a.name);
  }
  options.fields = FieldSelector::Parse(field_selector, r);
  options.bookmarks = Param(query, "allowWatchBookmarks") == "true";
  if (const long timeout = ParseNonNegative(Param(query, "timeoutSeconds"), "timeoutSeconds");
      timeout > 0) {
    options.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  }
  options.bookmark_api_version = r.ApiVersion();
  options.bookmark_kind = r.kind;

  WatchStart start;
  const std::string rv = Param(query, "resourceVersion");
  const std::string initial = Param(query, "sendInitialEvents");
  if (initial == "true") {
    start.mode = WatchStart::kNow;
    start.initial_events_end_bookmark = true;
  } else if (initial == "false" || (!rv.empty() && rv != "0")) {
    start.mode = WatchStart::kAfter;
    start.rv = rv.empty() || rv == "0" ? store_.current_rv() : ParseRv(rv);
  }

  const Negotiated n = NegotiateAccept(request.Header("accept"));
  if (n.format == OutputFormat::kTable) {
    auto converter = std::make_shared<TableConverter>(r, Param(query, "includeObject"), n.version);
    auto first = std::make_shared<std::atomic<bool>>(true);
    // Column definitions ride on the first event only, as the real server sends them.
    options.transform = [converter, first](const nlohmann::json& object) {
      return converter->EventTable(object, first->exchange(false));
    };
  } else if (n.format == OutputFormat::kPartialMetadata) {
    const std::string version = n.version;
    options.transform = [version](const nlohmann::json& object) {
      return PartialMetadata(object, version);
    };
    options.bookmark_api_version = "meta.k8s.io/" + n.version;
    options.bookmark_kind = "PartialObjectMetadata";
  } else if (MultiVersion(r)) {
    options.transform = [r](const nlohmann::json& object) { return WithVersion(object, r); };
  }
  HttpResponse response;
  response.stream = [this, r, start, options](std::shared_ptr<WatchSink> sink) {
    return store_.Watch(r, start, options, std::move(sink));
  };
  return response;
}

HttpResponse ApiServer::Write(const HttpRequest& request, const Query& query, const ResourceInfo& r,
                              const RequestAttributes& a) {
  // Typed clients (`kubectl create configmap|secret|namespace|serviceaccount`) send protobuf.
  const bool protobuf =
      request.Header("content-type").rfind("application/vnd.kubernetes.protobuf", 0) == 0;
  const auto body = [&] {
    return protobuf ? DecodeProtobufObject(request.body) : ParseBody(request.body);
  };
  std::vector<std::string> warnings;
  WriteOptions options;
  options.dry_run = Param(query, "dryRun") == "All";
  options.field_validation = ParseFieldValidation(Param(query, "fieldValidation"));
  options.warnings = &warnings;
  const bool status = a.subresource == "status";
  ObjectPtr result;
  HttpResponse response;
  if (a.verb == "create") {
    result = rest_.Create(r, a.ns, body(), options);
    response.status = 201;
  } else if (a.verb == "update") {
    result = rest_.Update(r, a.ns, a.name, body(), status, options);
  } else {
    result = rest_.Patch(r, a.ns, a.name, ParsePatchType(request.Header("content-type")),
                         request.body, status, options);
  }
  response.body = Render(request, query, r, result);
  for (const auto& warning : warnings) {
    response.headers.emplace_back("Warning", "299 - " + nlohmann::json(warning).dump());
  }
  return response;
}

HttpResponse ApiServer::DeleteObjects(const HttpRequest& request, const Query& query,
                                      const ResourceInfo& r, const RequestAttributes& a) {
  DeleteOptions options;
  std::string policy = Param(query, "propagationPolicy");
  options.dry_run = Param(query, "dryRun") == "All";
  if (Param(query, "orphanDependents") == "true") policy = "Orphan";
  if (const std::string grace = Param(query, "gracePeriodSeconds"); !grace.empty()) {
    options.grace_period_seconds = ParseGracePeriod(grace);
  }
  if (!request.body.empty()) {
    const nlohmann::json body = ParseBody(request.body);
    if (body.contains("propagationPolicy") && body["propagationPolicy"].is_string()) {
      policy = body["propagationPolicy"].get<std::string>();
    }
    if (body.value("orphanDependents", false)) policy = "Orphan";
    if (body.contains("gracePeriodSeconds") && !body["gracePeriodSeconds"].is_null()) {
      if (!body["gracePeriodSeconds"].is_number_integer()) {
        FailApi(400, "BadRequest", "gracePeriodSeconds: expected an integer, got {}",
                body["gracePeriodSeconds"].dump());
      }
      options.grace_period_seconds = body["gracePeriodSeconds"].get<int64_t>();
    }
    if (body.contains("preconditions") && body["preconditions"].is_object()) {
      const auto& pre = body["preconditions"];
      if (pre.contains("uid") && pre["uid"].is_string()) options.uid_precondition = pre["uid"];
      if (pre.contains("resourceVersion") && pre["resourceVersion"].is_string()) {
        options.rv_precondition = pre["resourceVersion"];
      }
    }
    if (body.contains("dryRun") && body["dryRun"].is_array() && !body["dryRun"].empty()) {
      options.dry_run = true;
    }
  }
  options.propagation = ParsePropagation(policy);
  HttpResponse response;
  if (a.verb == "delete") {
    const ObjectPtr deleted = rest_.Delete(r, a.ns, a.name, options);
    // 202: accepted but not gone yet (finalizers pending).
    if (!options.dry_run && store_.Get(r, a.ns, a.name) != nullptr) response.status = 202;
    response.body = Render(request, query, r, deleted);
    return response;
  }
  const ListResult list =
      store_.List(r, a.ns, LabelSelector::Parse(Param(query, "labelSelector")),
                  FieldSelector::Parse(Param(query, "fieldSelector"), r), 0, "");
  nlohmann::json items = nlohmann::json::array();
  for (const auto& item : list.items) {
    const auto& meta = item->object["metadata"];
    try {
      items.push_back(
          rest_.Delete(r, meta.value("namespace", ""), meta.value("name", ""), options)->object);
    } catch (const ApiError& e) {
      // Deleted meanwhile (e.g. by a cascade from an earlier item): that is the goal anyway.
      if (e.http_code() != 404) throw;
    }
  }
  response.body = nlohmann::json{
      {"kind", r.kind + "List"},
      {"apiVersion", r.ApiVersion()},
      {"metadata", {{"resourceVersion", std::to_string(store_.current_rv())}}},
      {"items",
       items}}.dump();
  return response;
}

HttpResponse ApiServer::PodLog(const Query& query, const ResourceInfo& r,
                               const RequestAttributes& a) {
  const ObjectPtr pod = store_.Get(r, a.ns, a.name);
  if (pod == nullptr) NotFound(r, a.name);
  std::vector<std::string> containers;
  const auto& spec = pod->object.value("spec", nlohmann::json::object());
  for (const auto& c : spec.value("containers", nlohmann::json::array())) {
    containers.push_back(c.value("name", ""));
  }
  std::string container = Param(query, "container");
  if (container.empty() && containers.size() == 1) container = containers[0];
  if (container.empty()) {
    FailApi(400, "BadRequest", "a container name must be specified for pod {}, choose one of: [{}]",
            a.name, fmt::join(containers, " "));
  }
  if (std::find(containers.begin(), containers.end(), container) == containers.end()) {
    FailApi(400, "BadRequest", "container {} is not valid for pod {}", container, a.name);
  }
  PodLogReader reader;
  {
    std::lock_guard lock(log_reader_mutex_);
    reader = log_reader_;
  }
  // follow=true is answered with what is there now: the stream ends instead of following.
  std::optional<std::string> text;
  if (reader) text = reader(a.ns, a.name, container);
  if (!text) {
    FailApi(400, "BadRequest",
            "container \"{}\" in pod \"{}\" is waiting to start: ContainerCreating", container,
            a.name);
  }
  if (!Param(query, "tailLines").empty()) {
    *text = TailLines(*text, ParseNonNegative(Param(query, "tailLines"), "tailLines"));
  }
  if (const long limit = ParseNonNegative(Param(query, "limitBytes"), "limitBytes");
      limit > 0 && static_cast<size_t>(limit) < text->size()) {
    text->resize(static_cast<size_t>(limit));
  }
  HttpResponse response;
  response.content_type = "text/plain";
  response.body = std::move(*text);
  return response;
}

}  // namespace autodist::k8s
