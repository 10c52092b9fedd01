#include "runtime/graph/external_data.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>

#include "runtime/common/error.h"
#include "runtime/graph/variable.h"

namespace autodist::graph {
namespace {

namespace fs = std::filesystem;

int64_t ParseCount(const std::string& text, const std::string& key, const std::string& what) {
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  AD_CHECK(ec == std::errc() && end == text.data() + text.size() && value >= 0, kInvalidArgument,
           "{}: external data '{}' is '{}'; expected a byte count >= 0", what, key, text);
  return value;
}

// True when `path` lies inside `dir` (both absolute and normalized).
bool IsInside(const fs::path& path, const fs::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

}  // namespace

bool IsExternalData(const onnx::TensorProto& tensor) {
  return tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.external_data_size() > 0;
}

std::string ModelDirectory(const std::string& model_path) {
  const fs::path parent = fs::path(model_path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

ExternalDataRange ResolveExternalData(const onnx::TensorProto& tensor, const std::string& model_dir,
                                      const std::string& what) {
  ExternalDataRange range;
  std::optional<int64_t> length;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    if (entry.key() == "location") {
      range.location = entry.value();
    } else if (entry.key() == "offset") {
      range.offset = ParseCount(entry.value(), "offset", what);
    } else if (entry.key() == "length") {
      length = ParseCount(entry.value(), "length", what);
    } else {
      // "checksum" (a SHA-1 the ONNX spec lists but no writer fills) is accepted and not checked.
      AD_CHECK(entry.key() == "checksum", kInvalidArgument,
               "{}: unknown external data key '{}'; expected location, offset, length or checksum",
               what, entry.key());
    }
  }
  AD_CHECK(tensor.data_location() == onnx::TensorProto::EXTERNAL, kInvalidArgument,
           "{}: has external_data entries but data_location is not EXTERNAL", what);
  AD_CHECK(!range.location.empty(), kInvalidArgument,
           "{}: external data without a 'location' (the data file, relative to the model)", what);
  const fs::path location(range.location);
  AD_CHECK(location.is_relative(), kInvalidArgument,
           "{}: external data location '{}' is absolute; expected a path relative to the model's "
           "directory",
           what, range.location);
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(model_dir, ec), ec);
  const fs::path lexical = (dir / location).lexically_normal();
  const fs::path real = fs::weakly_canonical(lexical, ec);
  AD_CHECK(IsInside(lexical, dir) && IsInside(real, dir), kInvalidArgument,
           "{}: external data location '{}' leaves the model's directory '{}'", what,
           range.location, model_dir);
  range.path = lexical.string();
  const fs::file_status status = fs::status(range.path, ec);
  AD_CHECK(fs::exists(status), kNotFound,
           "{}: its external data file '{}' does not exist (the model's data file must lie "
           "beside it)",
           what, range.path);
  AD_CHECK(fs::is_regular_file(status), kInvalidArgument,
           "{}: its external data file '{}' is not a regular file", what, range.path);
  const auto size = static_cast<int64_t>(fs::file_size(range.path, ec));
  AD_CHECK(!ec, kInvalidArgument, "{}: cannot read the size of '{}': {}", what, range.path,
           ec.message());
  AD_CHECK(range.offset <= size, kInvalidArgument,
           "{}: external data offset {} is beyond the end of '{}' ({} bytes)", what, range.offset,
           range.path, size);
  range.length = length.value_or(size - range.offset);
  AD_CHECK(range.length <= size - range.offset, kInvalidArgument,
           "{}: external data of {} bytes at offset {} runs past the end of '{}' ({} bytes)", what,
           range.length, range.offset, range.path, size);
  return range;
}

void CheckExternalData(const onnx::ModelProto& model, const std::string& model_path) {
  const std::string dir = ModelDirectory(model_path);
  for (const onnx::TensorProto& tensor : model.graph().initializer()) {
    if (!IsExternalData(tensor)) continue;
    const std::string what = fmt::format("model '{}': initializer '{}'", model_path, tensor.name());
    const ExternalDataRange range = ResolveExternalData(tensor, dir, what);
    const int64_t element_size = FloatElementSize(tensor.data_type());
    if (element_size == 0) continue;
    int64_t elements = 1;
    for (const int64_t dim : tensor.dims()) elements *= std::max<int64_t>(dim, 0);
    AD_CHECK(range.length == elements * element_size, kInvalidArgument,
             "{}: its external data in '{}' is {} bytes; its dims need {} ({} elements)", what,
             range.path, range.length, elements * element_size, elements);
  }
}

}  // namespace autodist::graph
