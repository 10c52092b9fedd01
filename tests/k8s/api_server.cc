#include "tests/k8s/api_server.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "tests/k8s/api_error.h"
#include "tests/k8s/discovery.h"

namespace autodist::k8s {
namespace {

HttpResponse Json(int status, const nlohmann::json& body) {
  HttpResponse response;
  response.status = status;
  response.body = body.dump();
  return response;
}

HttpResponse StatusResponse(const ApiError& e) {
  HttpResponse response = Json(e.http_code(), e.ToStatus());
  if (e.http_code() == 429 && e.details().contains("retryAfterSeconds")) {
    response.headers.emplace_back("Retry-After",
                                  std::to_string(e.details()["retryAfterSeconds"].get<int>()));
  }
  return response;
}

// The metav1.Status reason the real server gives with `code`, so clients that branch on the
// reason (IsConflict, IsNotFound, IsGone...) treat an injected failure like a real one.
std::string InjectedReason(int code) {
  static const std::map<int, std::string> kReasons = {
      {400, "BadRequest"},    {401, "Unauthorized"},         {403, "Forbidden"},
      {404, "NotFound"},      {405, "MethodNotAllowed"},     {409, "Conflict"},
      {410, "Expired"},       {415, "UnsupportedMediaType"}, {422, "Invalid"},
      {500, "InternalError"}, {503, "ServiceUnavailable"},   {504, "Timeout"}};
  auto it = kReasons.find(code);
  return it == kReasons.end() ? "InternalError" : it->second;
}

[[noreturn]] void NoSuchPath() {
  throw ApiError(404, "NotFound", "the server could not find the requested resource",
                 nlohmann::json::object());
}

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Which discovery format the Accept header asks for: "v2", "v2beta1" or "" (legacy).
std::string AggregatedVersion(const std::string& accept) {
  if (accept.find("as=APIGroupDiscoveryList") == std::string::npos) return "";
  size_t start = 0;
  while (start < accept.size()) {
    size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    const std::string media = accept.substr(start, end - start);
    if (media.find("as=APIGroupDiscoveryList") != std::string::npos) {
      if (media.find("v=v2beta1") != std::string::npos) return "v2beta1";
      if (media.find("v=v2") != std::string::npos) return "v2";
    }
    start = end + 1;
  }
  return "";
}

}  // namespace

std::string PercentDecode(const std::string& text, bool plus_is_space) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(text[i + 1]) &&
        std::isxdigit(text[i + 2])) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (text[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

std::map<std::string, std::string> ParseQuery(const std::string& raw) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < raw.size()) {
    size_t end = raw.find('&', start);
    if (end == std::string::npos) end = raw.size();
    const std::string pair = raw.substr(start, end - start);
    const size_t eq = pair.find('=');
    if (!pair.empty()) {
      out[PercentDecode(pair.substr(0, eq), true)] =
          eq == std::string::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    }
    start = end + 1;
  }
  return out;
}

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)), store_(options_.store), rest_(store_) {
  ticker_ = std::thread([this] { TickLoop(); });
}

ApiServer::~ApiServer() {
  {
    std::lock_guard lock(tick_mutex_);
    stopping_ = true;
  }
  tick_cv_.notify_all();
  ticker_.join();
  store_.CloseAllWatches();
}

void ApiServer::set_server_address(std::string address) {
  std::lock_guard lock(address_mutex_);
  options_.server_address = std::move(address);
}

void ApiServer::set_pod_log_reader(PodLogReader reader) {
  std::lock_guard lock(log_reader_mutex_);
  log_reader_ = std::move(reader);
}

void ApiServer::TickLoop() {
  auto last_bookmark = std::chrono::steady_clock::now();
  std::unique_lock lock(tick_mutex_);
  while (!tick_cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; })) {
    lock.unlock();
    store_.Tick();
    if (options_.collect_garbage) store_.CollectGarbage();
    const auto now = std::chrono::steady_clock::now();
    if (now - last_bookmark >= options_.bookmark_interval) {
      store_.SendBookmarksNow();
      last_bookmark = now;
    }
    lock.lock();
  }
}

HttpResponse ApiServer::Handle(const HttpRequest& request) {
  try {
    return Dispatch(request, ParseQuery(request.raw_query));
  } catch (const ApiError& e) {
    return StatusResponse(e);
  } catch (const Error& e) {
    return Json(500, FailureStatus(500, "InternalError",
                                   fmt::format("Internal error occurred: {}", e.what())));
  } catch (const std::exception& e) {
    // A bug of the double (e.g. a JSON type mismatch): report it to the client as the real
    // server reports panics, with the message, instead of dropping the connection.
    return Json(500, FailureStatus(500, "InternalError",
                                   fmt::format("Internal error occurred: {}", e.what())));
  }
}

HttpResponse ApiServer::Dispatch(const HttpRequest& request, const Query& query) {
  if (request.path.rfind("/_testdouble/", 0) == 0) return Control(request);
  if (!options_.bearer_token_file.empty()) Authenticate(request);
  if (auto response = NonResource(request)) return *response;
  std::vector<std::string> segments = Split(request.path);
  return Resource(request, query, segments);
}

void ApiServer::Authenticate(const HttpRequest& request) const {
  std::ifstream file(options_.bearer_token_file);
  std::string token((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty() || request.Header("authorization") != "Bearer " + token) {
    FailApi(401, "Unauthorized", "Unauthorized");
  }
}

HttpResponse ApiServer::Control(const HttpRequest& request) {
  const std::string& path = request.path;
  if (path == "/_testdouble/faults") {
    if (request.method == "POST") {
      const nlohmann::json body = ParseBody(request.body.empty() ? "{}" : request.body);
      faults_.Configure(body);
      if (body.value("compactHistory", false)) store_.CompactHistory();
      if (body.value("closeWatches", false)) store_.CloseAllWatches();
      return Json(200, faults_.State());
    }
    if (request.method == "DELETE") {
      faults_.Configure({{"reset", true}});
      return Json(200, faults_.State());
    }
    if (request.method == "GET") return Json(200, faults_.State());
  }
  if (path == "/_testdouble/stats") {
    if (request.method == "DELETE") faults_.ResetStats();
    nlohmann::json stats = faults_.Stats();
    stats["openWatches"] = store_.open_watches();
    stats["objects"] = store_.object_count();
    stats["resourceVersion"] = std::to_string(store_.current_rv());
    return Json(200, stats);
  }
  NoSuchPath();
}

std::optional<HttpResponse> ApiServer::NonResource(const HttpRequest& request) {
  const std::string& path = request.path;
  if (path == "/healthz" || path == "/readyz" || path == "/livez") {
    HttpResponse ok;
    ok.content_type = "text/plain; charset=utf-8";
    ok.body = "ok";
    return ok;
  }
  if (path == "/version" || path == "/version/") return Json(200, VersionDocument());
  if (path == "/openapi/v3" || path == "/openapi/v3/") {
    return Json(200, OpenApiV3Index(store_.Resources()));
  }
  if (path.rfind("/openapi/v3/", 0) == 0) {
    auto doc =
        OpenApiV3Document(store_.Resources(), path.substr(std::string("/openapi/v3/").size()));
    if (!doc) NoSuchPath();
    return Json(200, *doc);
  }
  if (path.rfind("/openapi/", 0) == 0) NoSuchPath();
  const std::vector<std::string> seg = Split(path);
  const bool is_api = !seg.empty() && seg[0] == "api";
  const bool is_apis = !seg.empty() && seg[0] == "apis";
  if (!is_api && !is_apis) NoSuchPath();
  // Deeper paths are resources, served by Resource(); only discovery needs the registry copied.
  if (seg.size() > (is_api ? 2u : 3u)) return std::nullopt;
  if (request.method != "GET") {
    FailApi(405, "MethodNotAllowed",
            "the server does not allow this method on the requested "
            "resource");
  }
  const auto resources = store_.Resources();
  if (seg.size() == 1) {
    const std::string aggregated = AggregatedVersion(request.Header("accept"));
    if (options_.aggregated_discovery && !aggregated.empty()) {
      HttpResponse response = Json(200, AggregatedDiscovery(resources, is_api, aggregated));
      response.content_type = fmt::format(
          "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList", aggregated);
      return response;
    }
    std::lock_guard lock(address_mutex_);
    return Json(200,
                is_api ? LegacyApiVersions(options_.server_address) : LegacyGroupList(resources));
  }
  if (is_api && seg.size() == 2) {
    auto list = ResourceList(resources, "", seg[1]);
    if (!list) NoSuchPath();
    return Json(200, *list);
  }
  if (is_apis && seg.size() == 2) {
    auto group = LegacyGroup(resources, seg[1]);
    if (!group) NoSuchPath();
    return Json(200, *group);
  }
  if (is_apis && seg.size() == 3) {
    auto list = ResourceList(resources, seg[1], seg[2]);
    if (!list) NoSuchPath();
    return Json(200, *list);
  }
  return std::nullopt;
}

HttpResponse ApiServer::Resource(const HttpRequest& request, const Query& query,
                                 const std::vector<std::string>& segments) {
  // /api/v1/... or /apis/<group>/<version>/...
  const bool core = segments[0] == "api";
  const std::string group = core ? "" : segments[1];
  const std::string version = core ? segments[1] : segments[2];
  std::vector<std::string> rest(segments.begin() + (core ? 2 : 3), segments.end());
  bool watch_path = false;
  if (!rest.empty() && rest[0] == "watch") {  // the deprecated /watch/ prefix
    watch_path = true;
    rest.erase(rest.begin());
  }
  RequestAttributes a;
  a.group = group;
  const std::string agent = request.Header("user-agent");
  a.client = agent.substr(0, agent.find_first_of("/ "));
  // namespaces/<ns>/<resource>... unless it is the namespace object itself (or its status).
  if (rest.size() >= 3 && rest[0] == "namespaces" &&
      store_.FindResource(group, version, rest[2]) != nullptr) {
    a.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (rest.empty() || rest.size() > 3) NoSuchPath();
  a.resource = rest[0];
  if (rest.size() >= 2) a.name = rest[1];
  if (rest.size() == 3) a.subresource = rest[2];
  const auto info = store_.FindResource(group, version, a.resource);
  if (!info) NoSuchPath();
  const bool pod_log = a.subresource == "log" && info->Key() == "pods";
  if (!a.subresource.empty() && !(a.subresource == "status" && info->has_status) && !pod_log) {
    NoSuchPath();
  }
  // Namespaced resources are listed and watched across namespaces without one; every other
  // request names the namespace. Cluster-scoped resources never live in one.
  if (info->namespaced && a.ns.empty() && !(request.method == "GET" && a.name.empty())) {
    NoSuchPath();
  }
  if (!info->namespaced && !a.ns.empty()) NoSuchPath();

  const auto param = [&](const char* key) {
    auto it = query.find(key);
    return it == query.end() ? std::string() : it->second;
  };
  const bool watch = watch_path || param("watch") == "true" || param("watch") == "1";
  const std::string& m = request.method;
  if (m == "GET") {
    a.verb = watch && !pod_log ? "watch" : a.name.empty() ? "list" : "get";
  } else if (pod_log) {
    FailApi(405, "MethodNotAllowed",
            "the server does not allow this method on the requested resource");
  } else if (m == "POST" && a.name.empty()) {
    a.verb = "create";
  } else if (m == "PUT" && !a.name.empty()) {
    a.verb = "update";
  } else if (m == "PATCH" && !a.name.empty()) {
    a.verb = "patch";
  } else if (m == "DELETE") {
    a.verb = a.name.empty() ? "deletecollection" : "delete";
  } else {
    FailApi(405, "MethodNotAllowed",
            "the server does not allow this method on the requested resource");
  }

  faults_.Count(a);
  const auto delay = faults_.DelayFor(a);
  if (auto fault = faults_.Fire(a)) {
    HttpResponse response;
    if (fault->code == 429) {
      response = StatusResponse(ApiError(
          429, "TooManyRequests",
          fault->message.empty() ? "the server has received too many requests and has asked us "
                                   "to try again later"
                                 : fault->message,
          {{"retryAfterSeconds", fault->retry_after_seconds}}));
    } else {
      response = StatusResponse(ApiError(
          fault->code, InjectedReason(fault->code),
          fault->message.empty() ? "Internal error occurred: injected fault" : fault->message,
          nlohmann::json::object()));
    }
    response.delay = delay;
    return response;
  }

  HttpResponse response;
  if (pod_log) {
    response = PodLog(query, *info, a);
  } else if (a.verb == "get") {
    response = GetObject(request, query, *info, a);
  } else if (a.verb == "list") {
    response = ListObjects(request, query, *info, a);
  } else if (a.verb == "watch") {
    response = WatchObjects(request, query, *info, a);
  } else if (a.verb == "create" || a.verb == "update" || a.verb == "patch") {
    response = Write(request, query, *info, a);
  } else {
    response = DeleteObjects(request, query, *info, a);
  }
  response.delay = delay;
  return response;
}

}  // namespace autodist::k8s
