// Fashion-MNIST as Debian's dataset-fashion-mnist package installs it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace autodist::data {

inline constexpr char kFashionMnistRoot[] = "/usr/share/datasets/fashion-mnist";

// The files of a split ("train": 60000 samples, "test": 10000) under `root`, as (graph input,
// path) pairs: ("image", <split>-images-idx3-ubyte.gz) uint8 [N, 28, 28] and ("label",
// <split>-labels-idx1-ubyte.gz) uint8 [N] (the test split's files are named t10k-*). Throws
// InvalidArgument for another split and NotFound, with a hint at the package, for a missing file.
std::vector<std::pair<std::string, std::string>> FashionMnistFiles(
    const std::string& split, const std::string& root = kFashionMnistRoot);

}  // namespace autodist::data
