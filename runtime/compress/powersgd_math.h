// The linear algebra of PowerSGD that is not a GEMM: orthogonalizing P's columns and drawing the
// initial Q, identically on every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace autodist::compress {

// Orthonormalizes the `cols` columns of the row-major rows x cols matrix `matrix` in place
// (Gram-Schmidt, each column orthogonalized twice against the earlier ones so that the result is
// orthogonal to working precision even when the columns are nearly dependent, as they are for a
// gradient of rank below r). A column left with at most `relative_epsilon` of its norm (or none)
// is set to zero instead of being divided: what is left is rounding noise of a direction the
// earlier columns already hold (the gradient has rank < r), and scale-free so that tiny gradients
// are treated like large ones.
void OrthonormalizeColumns(float* matrix, int64_t rows, int64_t cols, double relative_epsilon);

// `count` standard normal values, a pure function of (seed, name, draw): every rank draws the
// same Q for the same tensor. Our own Box-Muller over mt19937_64, because
// std::normal_distribution's output is implementation-defined.
std::vector<float> SeededNormal(uint64_t seed, const std::string& name, uint64_t draw,
                                size_t count);

// Whether some column of the row-major rows x cols matrix is all zero or has a non-finite value:
// such a Q cannot be warm-started from (its column would stay zero or NaN forever).
bool HasDegenerateColumn(const float* matrix, int64_t rows, int64_t cols);

}  // namespace autodist::compress
