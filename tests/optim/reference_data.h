// Readers for the PyTorch reference data in tests/fixtures/optim (written by
// tests/optim/make_reference.py; the file formats are described there).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/tensor/sparse_gradient.h"
#include "runtime/tensor/tensor.h"

namespace autodist::optim::testing {

using tensor::Shape;
using tensor::Tensor;

struct ReferenceInputs {
  Shape shape;
  int steps = 0;
  std::vector<float> init;
  std::vector<std::vector<float>> dense_grads;    // per step
  std::vector<std::vector<int64_t>> sparse_rows;  // per step
  std::vector<std::vector<float>> sparse_grads;   // per step, densified (zero rows)
};

struct ReferenceCase {
  std::string name;
  std::string inputs;     // "dense" | "sparse"
  std::string reference;  // "torch" | "sparse_adam"
  std::string optimizer;
  std::map<std::string, std::string> options;
  std::map<std::string, std::string> schedule;  // empty: constant learning rate
  std::map<int, std::vector<float>> params;     // step -> parameter after it
};

struct ReferenceSchedule {
  std::string name;
  double base_lr = 0;
  std::map<std::string, std::string> options;
  std::vector<double> rates;  // step -> learning rate
};

inline std::string FixturePath(const std::string& file) {
  return std::string(AUTODIST_FIXTURES_DIR) + "/optim/" + file;
}

// Lines of a fixture without comments, each split into words.
inline std::vector<std::vector<std::string>> ReadRecords(const std::string& file) {
  std::ifstream in(FixturePath(file));
  EXPECT_TRUE(in.good()) << "cannot read " << FixturePath(file);
  std::vector<std::vector<std::string>> records;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> record;
    for (std::string word; words >> word;) record.push_back(word);
    records.push_back(std::move(record));
  }
  return records;
}

inline std::vector<float> Floats(const std::vector<std::string>& record, size_t first) {
  std::vector<float> out;
  for (size_t i = first; i < record.size(); ++i) out.push_back(std::stof(record[i]));
  return out;
}

// "k=v" words from `first` on.
inline std::map<std::string, std::string> KeyValues(const std::vector<std::string>& record,
                                                    size_t first) {
  std::map<std::string, std::string> out;
  for (size_t i = first; i < record.size(); ++i) {
    const size_t eq = record[i].find('=');
    out[record[i].substr(0, eq)] = record[i].substr(eq + 1);
  }
  return out;
}

inline ReferenceInputs ReadInputs() {
  ReferenceInputs inputs;
  for (const auto& r : ReadRecords("inputs.txt")) {
    if (r[0] == "shape") {
      for (size_t i = 1; i < r.size(); ++i) inputs.shape.push_back(std::stoll(r[i]));
    } else if (r[0] == "steps") {
      inputs.steps = std::stoi(r[1]);
    } else if (r[0] == "init") {
      inputs.init = Floats(r, 1);
    } else if (r[0] == "dense_grad") {
      inputs.dense_grads.push_back(Floats(r, 2));
    } else if (r[0] == "sparse_rows") {
      std::vector<int64_t> rows;
      for (size_t i = 2; i < r.size(); ++i) rows.push_back(std::stoll(r[i]));
      inputs.sparse_rows.push_back(rows);
    } else if (r[0] == "sparse_grad") {
      inputs.sparse_grads.push_back(Floats(r, 2));
    }
  }
  return inputs;
}

inline std::vector<ReferenceCase> ReadCases() {
  std::vector<ReferenceCase> cases;
  for (const auto& r : ReadRecords("trajectories.txt")) {
    if (r[0] == "case") {
      ReferenceCase c;
      c.name = r[1];
      c.inputs = r[2];
      c.reference = r[3];
      c.optimizer = r[4];
      c.options = KeyValues(r, 5);
      cases.push_back(std::move(c));
    } else if (r[0] == "schedule") {
      cases.back().schedule = KeyValues(r, 1);
    } else if (r[0] == "param") {
      cases.back().params[std::stoi(r[1])] = Floats(r, 2);
    }
  }
  return cases;
}

inline std::vector<ReferenceSchedule> ReadSchedules() {
  std::vector<ReferenceSchedule> schedules;
  for (const auto& r : ReadRecords("schedules.txt")) {
    if (r[0] == "schedule") {
      ReferenceSchedule s;
      s.name = r[1];
      s.options = KeyValues(r, 2);
      s.base_lr = std::stod(s.options.at("base_lr"));
      s.options.erase("base_lr");
      schedules.push_back(std::move(s));
    } else if (r[0] == "lr") {
      schedules.back().rates.push_back(std::stod(r[2]));
    }
  }
  return schedules;
}

// The sparse gradient holding `rows` of the densified gradient `dense` of shape `shape`.
inline tensor::SparseGradient SparseFromRows(const std::vector<int64_t>& rows,
                                             const std::vector<float>& dense, const Shape& shape) {
  const int64_t row_size = tensor::NumElements(Shape(shape.begin() + 1, shape.end()));
  std::vector<float> values;
  for (const int64_t r : rows) {
    values.insert(values.end(), dense.begin() + r * row_size, dense.begin() + (r + 1) * row_size);
  }
  Shape values_shape = shape;
  values_shape[0] = static_cast<int64_t>(rows.size());
  tensor::SparseGradient grad;
  grad.indices = Tensor::FromVector<int64_t>({static_cast<int64_t>(rows.size())}, rows);
  grad.values = Tensor::FromVector<float>(values_shape, values);
  grad.dense_shape = shape;
  return grad;
}

inline std::vector<float> Values(const Tensor& tensor) {
  const float* data = tensor.data<float>();
  return std::vector<float>(data, data + tensor.numel());
}

}  // namespace autodist::optim::testing
