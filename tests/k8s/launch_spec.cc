#include "tests/k8s/launch_spec.h"

#include <cctype>
#include <optional>

#include "runtime/common/error.h"
#include "tests/k8s/base64.h"

namespace autodist::k8s {
namespace {

std::string PodName(const nlohmann::json& pod) {
  const auto& meta = pod.value("metadata", nlohmann::json::object());
  return meta.value("namespace", "") + "/" + meta.value("name", "");
}

// "registry:5000/autodist-runtime:dev@sha256:..." -> "registry:5000/autodist-runtime".
std::string Repository(const std::string& image) {
  std::string out = image.substr(0, image.find('@'));
  const size_t slash = out.rfind('/');
  const size_t colon = out.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    out.resize(colon);
  }
  return out;
}

std::vector<std::string> Strings(const nlohmann::json& container, const char* field,
                                 const std::string& where) {
  std::vector<std::string> out;
  if (!container.contains(field)) return out;
  AD_CHECK(container[field].is_array(), kInvalidArgument, "{}: {}: expected a list of strings",
           where, field);
  for (const auto& item : container[field]) {
    AD_CHECK(item.is_string(), kInvalidArgument, "{}: {}: expected a list of strings", where,
             field);
    out.push_back(item.get<std::string>());
  }
  return out;
}

// metadata.labels['key'] -> "key" when `path` starts with `prefix` ("metadata.labels").
std::optional<std::string> MapKey(const std::string& path, const std::string& prefix) {
  if (path.rfind(prefix + "['", 0) != 0 || !path.ends_with("']")) return std::nullopt;
  return path.substr(prefix.size() + 2, path.size() - prefix.size() - 4);
}

// Kubernetes' IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool IsEnvVarName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.' && ch != '_') {
      return false;
    }
  }
  return true;
}

// The text data of a ConfigMap (`data`) or Secret (`data`, base64-decoded), as env sees it.
std::map<std::string, std::string> EnvData(const nlohmann::json& object, bool secret) {
  std::map<std::string, std::string> out;
  const nlohmann::json data = object.value("data", nlohmann::json::object());
  for (const auto& [key, value] : data.items()) {
    const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    out[key] = secret ? Base64Decode(text) : text;
  }
  return out;
}

// valueFrom.configMapKeyRef / secretKeyRef: the value, or nullopt when optional and missing
// (the variable is then not set). The messages are the kubelet's.
std::optional<std::string> KeyRefValue(const nlohmann::json& ref, bool secret,
                                       const std::string& ns, const LaunchContext& context,
                                       const std::string& where) {
  const std::string name = ref.value("name", "");
  const std::string key = ref.value("key", "");
  const bool optional = ref.value("optional", false);
  const nlohmann::json object = LookupObject(context, secret ? "secrets" : "configmaps", ns, name);
  if (object.is_null()) {
    if (optional) return std::nullopt;
    Fail(ErrorCode::kInvalidArgument, "{}: {} \"{}\" not found", where,
         secret ? "secret" : "configmap", name);
  }
  const auto data = EnvData(object, secret);
  auto it = data.find(key);
  if (it == data.end()) {
    if (optional) return std::nullopt;
    Fail(ErrorCode::kInvalidArgument, "{}: couldn't find key {} in {} {}/{}", where, key,
         secret ? "Secret" : "ConfigMap", ns, name);
  }
  return it->second;
}

}  // namespace

nlohmann::json LookupObject(const LaunchContext& context, const std::string& resource,
                            const std::string& ns, const std::string& name) {
  return context.lookup ? context.lookup(resource, ns, name) : nlohmann::json();
}

const nlohmann::json& SelectContainer(const nlohmann::json& pod) {
  static const nlohmann::json kNone = nlohmann::json::array();
  const auto& spec = pod.contains("spec") ? pod["spec"] : kNone;
  const auto& containers =
      spec.is_object() && spec.contains("containers") ? spec["containers"] : kNone;
  AD_CHECK(containers.is_array() && !containers.empty(), kInvalidArgument,
           "pod {}: spec.containers: expected at least one container", PodName(pod));
  for (const auto& c : containers) {
    if (c.is_object() && c.value("name", "") == "autodist-runtime") return c;
  }
  return containers[0];
}

std::string ExpandVars(const std::string& input, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < input.size(); ++i) {
    if (input[i] != '$' || i + 1 == input.size()) {
      out += input[i];
      continue;
    }
    if (input[i + 1] == '$') {  // $$ escapes a $
      out += '$';
      ++i;
      continue;
    }
    const size_t close = input[i + 1] == '(' ? input.find(')', i + 2) : std::string::npos;
    if (close == std::string::npos) {
      out += input[i];
      continue;
    }
    const std::string name = input.substr(i + 2, close - i - 2);
    auto it = vars.find(name);
    out += it == vars.end() ? input.substr(i, close - i + 1) : it->second;
    i = close;
  }
  return out;
}

std::string FieldRefValue(const nlohmann::json& pod, const std::string& field_path,
                          const LaunchContext& context) {
  const auto& meta = pod.value("metadata", nlohmann::json::object());
  const auto& spec = pod.value("spec", nlohmann::json::object());
  if (field_path == "metadata.name") return meta.value("name", "");
  if (field_path == "metadata.namespace") return meta.value("namespace", "");
  if (field_path == "metadata.uid") return meta.value("uid", "");
  if (field_path == "spec.nodeName") return spec.value("nodeName", context.node_name);
  if (field_path == "spec.serviceAccountName") return spec.value("serviceAccountName", "default");
  if (field_path == "status.podIP" || field_path == "status.hostIP") return context.pod_ip;
  for (const char* map : {"metadata.labels", "metadata.annotations"}) {
    if (auto key = MapKey(field_path, map)) {
      const auto& values = meta.value(std::string(map).substr(9), nlohmann::json::object());
      return values.is_object() ? values.value(*key, "") : "";
    }
  }
  Fail(ErrorCode::kInvalidArgument,
       "pod {}: fieldRef.fieldPath '{}' is not served by the node agent; it serves metadata.name, "
       "metadata.namespace, metadata.uid, metadata.labels['<key>'], "
       "metadata.annotations['<key>'], spec.nodeName, spec.serviceAccountName, status.podIP, "
       "status.hostIP",
       PodName(pod), field_path);
}

LaunchSpec MakeLaunchSpec(const nlohmann::json& pod, const LaunchContext& context) {
  const nlohmann::json& c = SelectContainer(pod);
  LaunchSpec spec;
  spec.container = c.value("name", "");
  spec.image = c.value("image", "");
  spec.working_dir = c.value("workingDir", "");
  const std::string where = "pod " + PodName(pod) + ": container '" + spec.container + "'";

  // The environment, in order: later entries may refer to earlier ones as $(NAME).
  std::map<std::string, std::string> vars;
  const auto set = [&](const std::string& name, const std::string& value) {
    if (vars.contains(name)) {
      std::erase_if(spec.env, [&](const auto& kv) { return kv.first == name; });
    }
    vars[name] = value;
    spec.env.emplace_back(name, value);
  };
  for (const auto& [name, value] : context.extra_env) set(name, value);
  const std::string ns =
      pod.value("metadata", nlohmann::json::object()).value("namespace", "default");
  // envFrom first, as the kubelet does; keys that are not valid names are skipped.
  for (const auto& source : c.value("envFrom", nlohmann::json::array())) {
    const std::string prefix = source.value("prefix", "");
    for (const bool secret : {false, true}) {
      const char* field = secret ? "secretRef" : "configMapRef";
      if (!source.contains(field)) continue;
      const auto& ref = source[field];
      const std::string name = ref.value("name", "");
      const nlohmann::json object =
          LookupObject(context, secret ? "secrets" : "configmaps", ns, name);
      if (object.is_null()) {
        AD_CHECK(ref.value("optional", false), kInvalidArgument, "{}: envFrom: {} \"{}\" not found",
                 where, secret ? "secret" : "configmap", name);
        continue;
      }
      for (const auto& [key, value] : EnvData(object, secret)) {
        if (IsEnvVarName(prefix + key)) set(prefix + key, value);
      }
    }
  }
  for (const auto& e : c.value("env", nlohmann::json::array())) {
    const std::string name = e.value("name", "");
    AD_CHECK(!name.empty(), kInvalidArgument, "{}: env[].name: Required value", where);
    if (!e.contains("valueFrom")) {
      set(name, ExpandVars(e.value("value", ""), vars));
      continue;
    }
    const auto& from = e["valueFrom"];
    const std::string at = where + ": env '" + name + "'";
    if (from.contains("fieldRef")) {
      set(name, FieldRefValue(pod, from["fieldRef"].value("fieldPath", ""), context));
    } else if (from.contains("configMapKeyRef") || from.contains("secretKeyRef")) {
      const bool secret = from.contains("secretKeyRef");
      const auto value =
          KeyRefValue(from[secret ? "secretKeyRef" : "configMapKeyRef"], secret, ns, context, at);
      if (value) set(name, *value);
    } else {
      Fail(ErrorCode::kInvalidArgument,
           "{}: valueFrom: the node agent serves fieldRef, configMapKeyRef and secretKeyRef (not "
           "resourceFieldRef)",
           at);
    }
  }

  std::vector<std::string> command = Strings(c, "command", where);
  if (command.empty()) {
    auto it = context.image_entrypoints.find(Repository(spec.image));
    AD_CHECK(it != context.image_entrypoints.end(), kInvalidArgument,
             "{}: no command, and image '{}' has no entrypoint registered with the node agent "
             "(--image-entrypoint {}=PATH)",
             where, spec.image, Repository(spec.image));
    command = it->second;
  }
  for (const auto& arg : command) spec.argv.push_back(ExpandVars(arg, vars));
  for (const auto& arg : Strings(c, "args", where)) spec.argv.push_back(ExpandVars(arg, vars));
  spec.mounts = PlanMounts(pod, c, context, where);
  return spec;
}

}  // namespace autodist::k8s
