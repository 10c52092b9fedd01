// spec.model and spec.data.
#include <limits>

#include "runtime/data/fashion_mnist.h"
#include "runtime/job/k8s_syntax.h"
#include "runtime/job/parse_sections.h"

namespace autodist::job::detail {
namespace {

StringPairs ReadFiles(ParseContext& context, const YAML::Node& node, const std::string& path,
                      const PathResolver& resolver) {
  const MapReader map(context, node, path);
  if (map.entries().empty()) {
    context.Fail(path, "expected at least one graph input: file entry (e.g. image: x.npy)");
  }
  StringPairs files;
  for (const MapReader::Entry& entry : map.entries()) {
    if (entry.key.empty()) context.Fail(entry.path, "graph input names must not be empty");
    files.emplace_back(entry.key, ReadPath(context, entry.value, entry.path, resolver));
  }
  return files;
}

}  // namespace

ConfigMapRef ReadConfigMapRef(ParseContext& context, const YAML::Node& node,
                              const std::string& path, const std::string& default_key) {
  const MapReader map(context, node, path, {"name", "key"});
  ConfigMapRef ref;
  ref.key = default_key;
  ref.name = map.RequireString("name");
  if (!IsDns1123Subdomain(ref.name)) {
    context.Fail(map.PathOf("name"),
                 "expected a ConfigMap name (lowercase letters, digits, '-' and '.', at most 253 "
                 "characters, starting and ending with a letter or digit), got \"{}\"",
                 ref.name);
  }
  if (const auto key = map.String("key")) {
    if (!IsConfigMapKey(*key)) {
      context.Fail(map.PathOf("key"),
                   "expected a ConfigMap key (letters, digits, '-', '_' and '.', at most 253 "
                   "characters), got \"{}\"",
                   *key);
    }
    ref.key = *key;
  }
  return ref;
}

ModelSpec ReadModel(ParseContext& context, const YAML::Node& node, const std::string& path,
                    const PathResolver& resolver) {
  const MapReader map(context, node, path, {"path", "configMap", "loss", "logits", "labels"});
  ModelSpec model;
  const YAML::Node* file = map.Find("path");
  const YAML::Node* config_map = map.Find("configMap");
  if (file != nullptr && config_map != nullptr) {
    context.Fail(map.PathOf("configMap"), "give either path or configMap, not both");
  }
  if (file == nullptr && config_map == nullptr) {
    context.Fail(path, "one of path (an ONNX file) or configMap is required");
  }
  if (file != nullptr) model.path = ReadPath(context, *file, map.PathOf("path"), resolver);
  if (config_map != nullptr) {
    model.config_map =
        ReadConfigMapRef(context, *config_map, map.PathOf("configMap"), ConfigMapRef{}.key);
  }
  if (const YAML::Node* loss = map.Find("loss")) {
    model.loss = ReadNonEmptyString(context, *loss, map.PathOf("loss"));
  }
  if (const YAML::Node* logits = map.Find("logits")) {
    model.logits = ReadNonEmptyString(context, *logits, map.PathOf("logits"));
  }
  if (const YAML::Node* labels = map.Find("labels")) {
    model.labels = ReadNonEmptyString(context, *labels, map.PathOf("labels"));
  }
  return model;
}

DataSpec ReadData(ParseContext& context, const YAML::Node& node, const std::string& path,
                  const PathResolver& resolver) {
  const MapReader map(context, node, path,
                      {"format", "dir", "train", "eval", "batchSizePerReplica", "evalBatchSize",
                       "shuffle", "seed"});
  DataSpec data;
  const std::string format = map.RequireString("format");
  if (format == DataFormatName(DataFormat::kFashionMnist)) {
    data.format = DataFormat::kFashionMnist;
    for (const char* key : {"train", "eval"}) {
      if (map.Has(key)) {
        context.Fail(map.PathOf(key),
                     "only for format files (fashion-mnist trains on its train split and "
                     "evaluates on its test split)");
      }
    }
    data.dir = data::kFashionMnistRoot;
    if (const YAML::Node* dir = map.Find("dir")) {
      data.dir = ReadPath(context, *dir, map.PathOf("dir"), resolver);
    }
  } else if (format == DataFormatName(DataFormat::kFiles)) {
    data.format = DataFormat::kFiles;
    if (map.Has("dir")) {
      context.Fail(map.PathOf("dir"),
                   "only for format fashion-mnist (format files names each file in train/eval)");
    }
    data.train = ReadFiles(context, map.Require("train"), map.PathOf("train"), resolver);
    if (const YAML::Node* eval = map.Find("eval")) {
      data.eval = ReadFiles(context, *eval, map.PathOf("eval"), resolver);
    }
  } else {
    context.Fail(map.PathOf("format"), "expected one of: fashion-mnist, files; got \"{}\"", format);
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  data.batch_size_per_replica = map.RequireInt("batchSizePerReplica", 1, kMax);
  data.eval_batch_size = map.Int("evalBatchSize", 1, kMax).value_or(data.eval_batch_size);
  data.shuffle = map.Bool("shuffle").value_or(data.shuffle);
  data.seed = static_cast<uint64_t>(map.Int("seed", 0, kMax).value_or(0));
  return data;
}

}  // namespace autodist::job::detail
