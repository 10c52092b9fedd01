#include "runtime/exec/checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <regex>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"

namespace autodist::exec {

autodist::proto::TensorValue ToTensorValue(const std::string& name, const tensor::Tensor& value) {
  autodist::proto::TensorValue out;
  out.set_name(name);
  out.set_data_type(static_cast<int32_t>(value.dtype()));
  for (const int64_t dim : value.shape()) out.add_dims(dim);
  out.set_data(value.raw(), value.nbytes());
  return out;
}

tensor::Tensor FromTensorValue(const autodist::proto::TensorValue& value, const std::string& what) {
  const tensor::DType dtype = tensor::DTypeFromOnnx(value.data_type(), what);
  tensor::Tensor out(dtype, tensor::Shape(value.dims().begin(), value.dims().end()));
  AD_CHECK(value.data().size() == out.nbytes(), kInvalidArgument,
           "{}: '{}' holds {} bytes, its shape {} needs {}", what, value.name(),
           value.data().size(), tensor::ShapeToString(out.shape()), out.nbytes());
  if (out.nbytes() > 0) std::memcpy(out.raw(), value.data().data(), out.nbytes());
  return out;
}

std::string WriteCheckpoint(const std::string& dir, const autodist::proto::Checkpoint& checkpoint) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  AD_CHECK(!ec, kInvalidArgument, "cannot create checkpoint directory '{}': {}", dir, ec.message());
  const std::string path = fmt::format("{}/checkpoint-{}.pb", dir, checkpoint.step());
  const std::string temporary = path + ".tmp";
  std::string bytes;
  AD_CHECK(checkpoint.SerializeToString(&bytes), kInternal, "cannot serialize the checkpoint");
  WriteFileBytes(temporary, bytes);
  std::filesystem::rename(temporary, path, ec);
  AD_CHECK(!ec, kInvalidArgument, "cannot move checkpoint into place at '{}': {}", path,
           ec.message());
  return path;
}

std::optional<std::string> LatestCheckpoint(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return std::nullopt;
  static const std::regex kName(R"(checkpoint-(\d+)\.pb)");
  std::optional<std::string> best;
  int64_t best_step = -1;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, kName)) continue;
    const int64_t step = std::stoll(match[1].str());
    if (step > best_step) {
      best_step = step;
      best = entry.path().string();
    }
  }
  return best;
}

autodist::proto::Checkpoint ReadCheckpoint(const std::string& path) {
  autodist::proto::Checkpoint checkpoint;
  AD_CHECK(checkpoint.ParseFromString(ReadFileBytes(path, "checkpoint")), kInvalidArgument,
           "'{}' is not a checkpoint", path);
  return checkpoint;
}

}  // namespace autodist::exec
