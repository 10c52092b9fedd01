#include "runtime/data/fashion_mnist.h"

#include <filesystem>

#include "runtime/common/error.h"

namespace autodist::data {

std::vector<std::pair<std::string, std::string>> FashionMnistFiles(const std::string& split,
                                                                   const std::string& root) {
  AD_CHECK(split == "train" || split == "test", kInvalidArgument,
           "Fashion-MNIST split '{}' does not exist (expected 'train' or 'test')", split);
  const std::string prefix = split == "train" ? "train" : "t10k";
  std::vector<std::pair<std::string, std::string>> files = {
      {"image", (std::filesystem::path(root) / (prefix + "-images-idx3-ubyte.gz")).string()},
      {"label", (std::filesystem::path(root) / (prefix + "-labels-idx1-ubyte.gz")).string()},
  };
  for (const auto& [input, path] : files) {
    std::error_code ec;
    AD_CHECK(std::filesystem::is_regular_file(path, ec), kNotFound,
             "Fashion-MNIST {} {} file '{}' not found; install the Debian package "
             "dataset-fashion-mnist or point the dataset root at a directory holding it",
             split, input, path);
  }
  return files;
}

}  // namespace autodist::data
