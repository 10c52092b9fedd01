#include "tests/k8s/table.h"

#include <fmt/format.h>

#include "tests/k8s/clock.h"
#include "tests/k8s/jsonpath.h"

namespace autodist::k8s {
namespace {

nlohmann::json Column(const std::string& name, const std::string& type, int priority = 0,
                      const std::string& format = "", const std::string& description = "") {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description.empty() ? name : description},
          {"priority", priority}};
}

std::string Age(const nlohmann::json& object) {
  const auto created = ParseRfc3339(object["metadata"].value("creationTimestamp", ""));
  if (!created) return "<unknown>";
  return HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::system_clock::now() - *created));
}

std::string OrNone(const nlohmann::json& node, const char* key) {
  const std::string v = node.is_object() ? node.value(key, "") : "";
  return v.empty() ? "<none>" : v;
}

nlohmann::json PodCells(const nlohmann::json& pod) {
  const auto& spec = pod.value("spec", nlohmann::json::object());
  const auto& status = pod.value("status", nlohmann::json::object());
  int total = static_cast<int>(spec.value("containers", nlohmann::json::array()).size());
  int ready = 0;
  int restarts = 0;
  std::string reason = status.value("reason", status.value("phase", "Unknown"));
  for (const auto& c : status.value("containerStatuses", nlohmann::json::array())) {
    ready += c.value("ready", false) ? 1 : 0;
    restarts += c.value("restartCount", 0);
    const auto& state = c.value("state", nlohmann::json::object());
    if (state.contains("waiting") && !state["waiting"].value("reason", "").empty()) {
      reason = state["waiting"]["reason"];
    } else if (state.contains("terminated")) {
      reason = state["terminated"].value("reason", "Completed");
    }
  }
  if (pod["metadata"].contains("deletionTimestamp")) reason = "Terminating";
  return {pod["metadata"].value("name", ""),
          fmt::format("{}/{}", ready, total),
          reason,
          std::to_string(restarts),
          Age(pod),
          OrNone(status, "podIP"),
          OrNone(spec, "nodeName"),
          "<none>",
          "<none>"};
}

nlohmann::json NodeCells(const nlohmann::json& node) {
  const auto& status = node.value("status", nlohmann::json::object());
  std::string ready = "Unknown";
  for (const auto& c : status.value("conditions", nlohmann::json::array())) {
    if (c.value("type", "") == "Ready")
      ready = c.value("status", "") == "True" ? "Ready" : "NotReady";
  }
  std::string internal_ip = "<none>";
  for (const auto& a : status.value("addresses", nlohmann::json::array())) {
    if (a.value("type", "") == "InternalIP") internal_ip = a.value("address", "<none>");
  }
  return {node["metadata"].value("name", ""),
          ready,
          "<none>",
          Age(node),
          status.value("nodeInfo", nlohmann::json::object()).value("kubeletVersion", ""),
          internal_ip};
}

std::string ServicePorts(const nlohmann::json& spec) {
  std::string out;
  for (const auto& p : spec.value("ports", nlohmann::json::array())) {
    out += (out.empty() ? "" : ",") +
           fmt::format("{}/{}", p.value("port", 0), p.value("protocol", "TCP"));
  }
  return out.empty() ? "<none>" : out;
}

// A CRD printer column's cell, typed as the real server types it (cellForJSONValue).
nlohmann::json CustomCell(const nlohmann::json& column, const nlohmann::json& object) {
  const auto results = EvaluateJsonPath(object, column.value("jsonPath", ""));
  if (results.empty()) return nullptr;
  if (results.size() > 1) {
    std::string joined;
    for (const auto* r : results) {
      joined += (joined.empty() ? "" : " ") + (r->is_string() ? r->get<std::string>() : r->dump());
    }
    return joined;
  }
  const nlohmann::json& v = *results[0];
  const std::string type = column.value("type", "string");
  if (type == "integer" && v.is_number()) return v.get<long long>();
  if (type == "number" && v.is_number()) return v.get<double>();
  if (type == "boolean" && v.is_boolean()) return v;
  if (type == "string" && v.is_string()) return v;
  if (type == "date" && v.is_string()) {
    const auto t = ParseRfc3339(v.get<std::string>());
    if (!t) return "<invalid>";
    return HumanDuration(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *t));
  }
  return nullptr;
}

}  // namespace

Negotiated NegotiateAccept(const std::string& accept) {
  size_t start = 0;
  while (start <= accept.size()) {
    size_t end = accept.find(',', start);
    if (end == std::string::npos) end = accept.size();
    const std::string media = accept.substr(start, end - start);
    auto param = [&](const std::string& key) {
      const size_t at = media.find(key + "=");
      if (at == std::string::npos) return std::string();
      const size_t value_end = media.find(';', at);
      std::string v = media.substr(at + key.size() + 1, value_end == std::string::npos
                                                            ? std::string::npos
                                                            : value_end - at - key.size() - 1);
      while (!v.empty() && v.back() == ' ') v.pop_back();
      return v;
    };
    const std::string as = param("as");
    const std::string version = param("v").empty() ? "v1" : param("v");
    if (param("g") == "meta.k8s.io" && (version == "v1" || version == "v1beta1")) {
      if (as == "Table") return {OutputFormat::kTable, version};
      if (as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") {
        return {OutputFormat::kPartialMetadata, version};
      }
    }
    if (as.empty() &&
        (media.find("json") != std::string::npos || media.find("*/*") != std::string::npos)) {
      return {};
    }
    start = end + 1;
  }
  return {};
}

TableConverter::TableConverter(const ResourceInfo& r, std::string include_object,
                               std::string version)
    : resource_(r),
      include_object_(include_object.empty() ? "Metadata" : std::move(include_object)),
      version_(std::move(version)) {}

nlohmann::json TableConverter::Columns() const {
  nlohmann::json cols = {
      Column("Name", "string", 0, "name", "Name must be unique within a namespace.")};
  const std::string& p = resource_.plural;
  if (resource_.is_custom) {
    for (const auto& c : resource_.printer_columns) {
      cols.push_back(Column(c.value("name", ""), c.value("type", "string"), c.value("priority", 0),
                            c.value("format", ""),
                            c.value("description",
                                    "Custom resource definition column (in "
                                    "JSONPath format): " +
                                        c.value("jsonPath", ""))));
    }
    if (resource_.printer_columns.empty()) cols.push_back(Column("Age", "date"));
  } else if (p == "pods") {
    for (const char* n : {"Ready", "Status", "Restarts", "Age"})
      cols.push_back(Column(n, "string"));
    for (const char* n : {"IP", "Node", "Nominated Node", "Readiness Gates"}) {
      cols.push_back(Column(n, "string", 1));
    }
  } else if (p == "services") {
    for (const char* n : {"Type", "Cluster-IP", "External-IP", "Port(s)", "Age"}) {
      cols.push_back(Column(n, "string"));
    }
  } else if (p == "configmaps") {
    cols.push_back(Column("Data", "integer"));
    cols.push_back(Column("Age", "string"));
  } else if (p == "namespaces") {
    cols.push_back(Column("Status", "string"));
    cols.push_back(Column("Age", "string"));
  } else if (p == "nodes") {
    for (const char* n : {"Status", "Roles", "Age", "Version"}) cols.push_back(Column(n, "string"));
    cols.push_back(Column("Internal-IP", "string", 1));
  } else {
    cols.push_back(Column("Created At", "date", 0, "", "The time the object was created."));
  }
  return cols;
}

nlohmann::json TableConverter::Cells(const nlohmann::json& object) const {
  const std::string name = object["metadata"].value("name", "");
  const std::string& p = resource_.plural;
  if (resource_.is_custom) {
    nlohmann::json cells = {name};
    for (const auto& c : resource_.printer_columns) cells.push_back(CustomCell(c, object));
    if (resource_.printer_columns.empty()) cells.push_back(Age(object));
    return cells;
  }
  if (p == "pods") return PodCells(object);
  if (p == "services") {
    const auto& spec = object.value("spec", nlohmann::json::object());
    return {name,
            spec.value("type", "ClusterIP"),
            spec.value("clusterIP", "<none>"),
            "<none>",
            ServicePorts(spec),
            Age(object)};
  }
  if (p == "configmaps") {
    const size_t data = object.value("data", nlohmann::json::object()).size() +
                        object.value("binaryData", nlohmann::json::object()).size();
    return {name, data, Age(object)};
  }
  if (p == "namespaces") {
    return {name, object.value("status", nlohmann::json::object()).value("phase", "Active"),
            Age(object)};
  }
  if (p == "nodes") return NodeCells(object);
  return {name, object["metadata"].value("creationTimestamp", "")};
}

nlohmann::json TableConverter::Row(const nlohmann::json& object) const {
  nlohmann::json row = {{"cells", Cells(object)}};
  if (include_object_ == "Object") {
    row["object"] = object;
  } else if (include_object_ == "Metadata") {
    row["object"] = PartialMetadata(object, version_);
  }
  return row;
}

nlohmann::json TableConverter::Table(const std::vector<ObjectPtr>& items, uint64_t rv,
                                     const std::string& continue_token) const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& item : items) rows.push_back(Row(item->object));
  nlohmann::json meta = {{"resourceVersion", std::to_string(rv)}};
  if (!continue_token.empty()) meta["continue"] = continue_token;
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/" + version_},
          {"metadata", meta},
          {"columnDefinitions", Columns()},
          {"rows", rows}};
}

nlohmann::json TableConverter::EventTable(const nlohmann::json& object, bool with_columns) const {
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/" + version_},
          {"metadata", {{"resourceVersion", object["metadata"].value("resourceVersion", "")}}},
          {"columnDefinitions", with_columns ? Columns() : nlohmann::json::array()},
          {"rows", {Row(object)}}};
}

nlohmann::json PartialMetadata(const nlohmann::json& object, const std::string& version) {
  return {{"kind", "PartialObjectMetadata"},
          {"apiVersion", "meta.k8s.io/" + version},
          {"metadata", object["metadata"]}};
}

}  // namespace autodist::k8s
