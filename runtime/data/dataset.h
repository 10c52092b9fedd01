// Dataset: the rows of several arrays, one per graph input, aligned by their first dimension, and
// their conversion into feeds the graph computes with.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/tensor/tensor.h"

namespace autodist::data {

// One array feeding one graph input; row i of every column belongs to sample i.
struct Column {
  std::string input;     // graph input name
  tensor::Tensor array;  // [rows, ...]
  std::string source;    // the file it came from, for messages
};

// Normalization of image columns after scaling to [0, 1], as torchvision's Normalize does:
// (x - mean) / std in float32. Unset values leave that step out (mean 0, std 1).
struct NormalizeOptions {
  std::optional<float> mean;
  std::optional<float> std;
};

// Declared shape of ONE row per graph input name (without the batch dimension); -1 (or any
// negative value) marks an unknown dimension.
using RowShapes = std::map<std::string, std::vector<int64_t>>;

class Dataset {
 public:
  // Checks that there is at least one column, input names are distinct, every array has a first
  // dimension and all first dimensions are equal (else the error names both files and their row
  // counts), element types are supported and std is positive and finite.
  static Dataset FromColumns(std::vector<Column> columns, NormalizeOptions normalize = {});

  // Reads each (graph input, file) pair with ReadArray and builds the dataset from them.
  static Dataset FromFiles(const std::vector<std::pair<std::string, std::string>>& files,
                           NormalizeOptions normalize = {});

  int64_t size() const { return rows_; }
  const std::vector<Column>& columns() const { return columns_; }

  // The shape each column's rows are fed with: the array's row shape, reshaped to the declared
  // `row_shapes` entry for the column's input when the element counts match ([28, 28] feeds an
  // input declared [1, 28, 28]; one unknown dimension is inferred). Inputs absent from
  // `row_shapes` keep the array's row shape; entries naming no column are ignored (the session
  // reports graph inputs left unfed). Throws InvalidArgument naming the input and file when a
  // declared shape cannot hold a row.
  std::map<std::string, tensor::Shape> FeedRowShapes(const RowShapes& row_shapes) const;

  // The rows `rows` (in that order) of every column, as feeds [rows.size(), row shape...]:
  // uint8 arrays of rank >= 2 are images and become float32 x / 255 (then normalized), uint8
  // arrays of rank 1 and int8/int32/int64 arrays are labels and become int64, float32 and float64
  // become float32, bool stays bool. Throws InvalidArgument for a row outside [0, size()).
  // Safe to call from several threads at once.
  std::map<std::string, tensor::Tensor> Batch(const std::vector<int64_t>& rows,
                                              const RowShapes& row_shapes) const;

 private:
  Dataset(std::vector<Column> columns, NormalizeOptions normalize, int64_t rows)
      : columns_(std::move(columns)), normalize_(normalize), rows_(rows) {}

  std::vector<Column> columns_;
  NormalizeOptions normalize_;
  int64_t rows_ = 0;
};

}  // namespace autodist::data
