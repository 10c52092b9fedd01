// Checkpoints of a training run (proto/checkpoint.proto), written atomically as
// <dir>/checkpoint-<step>.pb; the latest is the one with the highest step.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "proto/checkpoint.pb.h"
#include "runtime/tensor/tensor.h"

namespace autodist::exec {

autodist::proto::TensorValue ToTensorValue(const std::string& name, const tensor::Tensor& value);
tensor::Tensor FromTensorValue(const autodist::proto::TensorValue& value, const std::string& what);

// Writes `checkpoint` to <dir>/checkpoint-<step>.pb (through a temporary file and a rename, so a
// crash never leaves a torn checkpoint) and returns the path. Creates `dir` if needed.
std::string WriteCheckpoint(const std::string& dir, const autodist::proto::Checkpoint& checkpoint);

// The path of the latest checkpoint in `dir`, if any.
std::optional<std::string> LatestCheckpoint(const std::string& dir);

// Reads a checkpoint; errors name the file.
autodist::proto::Checkpoint ReadCheckpoint(const std::string& path);

}  // namespace autodist::exec
