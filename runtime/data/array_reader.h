// One entry point for the array files a job names as data: NPY or IDX, told apart by magic bytes.
#pragma once

#include <string>

#include "runtime/tensor/tensor.h"

namespace autodist::data {

// Reads `path` as NPY (magic "\x93NUMPY") or IDX (raw, or gzip-compressed). The magic bytes decide;
// the file name breaks the tie when they match neither (a name ending in .npy is reported as a bad
// NPY file, one ending in .idx, -ubyte or .gz as a bad IDX file). Throws NotFound for a missing
// file and InvalidArgument naming the file otherwise.
tensor::Tensor ReadArray(const std::string& path);

}  // namespace autodist::data
