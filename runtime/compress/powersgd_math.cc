#include "runtime/compress/powersgd_math.h"

#include <cmath>
#include <numbers>
#include <random>

namespace autodist::compress {
namespace {

// FNV-1a: a hash of the tensor name that does not depend on the standard library.
uint64_t HashName(const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// SplitMix64's finalizer: spreads (seed, name, draw) into well-separated engine seeds.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A double uniform in (0, 1]: 53 random bits, shifted off zero so the log below is finite.
double Uniform(std::mt19937_64& engine) {
  return (static_cast<double>(engine() >> 11) + 1.0) * 0x1.0p-53;
}

double Norm(const std::vector<double>& column) {
  double sum = 0.0;
  for (const double value : column) sum += value * value;
  return std::sqrt(sum);
}

}  // namespace

void OrthonormalizeColumns(float* matrix, int64_t rows, int64_t cols, double relative_epsilon) {
  // Columns are strided in the row-major matrix: work on contiguous double copies.
  std::vector<std::vector<double>> columns(static_cast<size_t>(cols),
                                           std::vector<double>(static_cast<size_t>(rows)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) columns[c][r] = matrix[r * cols + c];
  }
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<double>& column = columns[c];
    const double original_norm = Norm(column);
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t earlier = 0; earlier < c; ++earlier) {
        const std::vector<double>& basis = columns[earlier];
        double dot = 0.0;
        for (int64_t r = 0; r < rows; ++r) dot += basis[r] * column[r];
        for (int64_t r = 0; r < rows; ++r) column[r] -= dot * basis[r];
      }
    }
    const double norm = Norm(column);
    const double scale = norm > relative_epsilon * original_norm && norm > 0.0 ? 1.0 / norm : 0.0;
    for (int64_t r = 0; r < rows; ++r) column[r] *= scale;
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) matrix[r * cols + c] = static_cast<float>(columns[c][r]);
  }
}

std::vector<float> SeededNormal(uint64_t seed, const std::string& name, uint64_t draw,
                                size_t count) {
  std::mt19937_64 engine(Mix(Mix(seed) ^ HashName(name)) ^ Mix(draw));
  std::vector<float> values(count);
  for (size_t i = 0; i < count; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(Uniform(engine)));
    const double angle = 2.0 * std::numbers::pi * Uniform(engine);
    values[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < count) values[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
  return values;
}

bool HasDegenerateColumn(const float* matrix, int64_t rows, int64_t cols) {
  for (int64_t c = 0; c < cols; ++c) {
    bool all_zero = true;
    for (int64_t r = 0; r < rows; ++r) {
      const float value = matrix[r * cols + c];
      if (!std::isfinite(value)) return true;
      all_zero = all_zero && value == 0.0F;
    }
    if (all_zero) return true;
  }
  return false;
}

}  // namespace autodist::compress
