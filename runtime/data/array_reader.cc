#include "runtime/data/array_reader.h"

#include <string_view>

#include "runtime/common/error.h"
#include "runtime/common/file_io.h"
#include "runtime/data/gzip.h"
#include "runtime/data/idx_reader.h"
#include "runtime/data/npy_reader.h"

namespace autodist::data {
namespace {

bool NameLooksLikeIdx(std::string_view path) {
  // MNIST's names: train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz).
  return path.ends_with(".idx") || path.ends_with("-ubyte") || path.ends_with(".gz");
}

}  // namespace

tensor::Tensor ReadArray(const std::string& path) {
  std::string bytes = ReadFileBytes(path, "array");
  if (IsGzip(bytes)) bytes = Gunzip(bytes, path);
  if (IsNpy(bytes) || std::string_view(path).ends_with(".npy")) return ParseNpy(bytes, path);
  const bool idx_magic = bytes.size() >= 2 && bytes[0] == '\0' && bytes[1] == '\0';
  if (idx_magic || NameLooksLikeIdx(path)) return ParseIdx(bytes, path);
  Fail(ErrorCode::kInvalidArgument,
       "array file '{}' is neither NPY (magic \"\\x93NUMPY\") nor IDX (magic 0x00 0x00 <type> "
       "<rank>, raw or gzip-compressed); expected a .npy, .idx, *-ubyte or .gz file",
       path);
}

}  // namespace autodist::data
