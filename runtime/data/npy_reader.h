// NPY arrays (numpy.save; format spec: numpy/lib/format.py): the magic "\x93NUMPY", a version
// byte pair, a little-endian header length, a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and the raw elements.
#pragma once

#include <string>
#include <string_view>

#include "runtime/tensor/tensor.h"

namespace autodist::data {

// Reads an NPY file of format version 1.0, 2.0 or 3.0. Element types: '<f4' float32, '<f8'
// float64, '<i8' int64, '<i4' int32, '|u1' uint8, '|i1' int8, '|b1' bool; '=' (native order) is
// accepted as '<' because the engine runs on little-endian hosts. Throws InvalidArgument naming
// the file for big-endian data, Fortran (column-major) order, other element types (float16,
// unsigned wider than a byte, strings, objects, structured types), a malformed header, bool
// bytes other than 0 and 1, and data that is truncated or followed by extra bytes; NotFound for a
// missing file.
tensor::Tensor ReadNpy(const std::string& path);

// Parses NPY bytes; `source` names them in messages.
tensor::Tensor ParseNpy(std::string_view bytes, const std::string& source);

// Whether `bytes` start with the NPY magic string "\x93NUMPY".
bool IsNpy(std::string_view bytes);

}  // namespace autodist::data
