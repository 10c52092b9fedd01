// IDX arrays, the format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/): a magic
// number 0x00 0x00 <type> <rank>, `rank` big-endian uint32 dimensions, then the elements,
// big-endian, row-major. Files may be gzip-compressed (detected by magic bytes, not by name).
#pragma once

#include <string>
#include <string_view>

#include "runtime/tensor/tensor.h"

namespace autodist::data {

// Reads an IDX file, raw or gzip-compressed. The tensor has the file's element type: 0x08 uint8,
// 0x09 int8, 0x0B int16 (widened to int32, which the engine computes with), 0x0C int32,
// 0x0D float32, 0x0E float64. Throws NotFound for a missing file and InvalidArgument naming the
// file and what was expected vs found for a bad magic number, short header, truncated data,
// trailing bytes or corrupt gzip data.
tensor::Tensor ReadIdx(const std::string& path);

// Parses uncompressed IDX bytes; `source` names them in messages.
tensor::Tensor ParseIdx(std::string_view bytes, const std::string& source);

}  // namespace autodist::data
