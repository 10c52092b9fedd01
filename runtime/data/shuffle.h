// Deterministic shuffling, reproducible on every platform and standard library: the engine
// (std::mt19937_64) has a fully specified output sequence, and the shuffle and its integer draws
// are written here rather than taken from std::shuffle / std::uniform_int_distribution, whose
// algorithms are implementation-defined.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace autodist::data {

// A uniform integer in [0, bound), bound >= 1: draws 64-bit outputs r of `engine` until
// r >= 2^64 mod bound (rejecting the incomplete last block, so there is no modulo bias) and
// returns r mod bound.
uint64_t UniformBelow(std::mt19937_64& engine, uint64_t bound);

// A permutation of 0..n-1: starting from the identity, for i = n-1 down to 1 swap element i with
// element UniformBelow(engine, i + 1) (Fisher-Yates), with engine = std::mt19937_64(seed).
std::vector<int64_t> Permutation(int64_t n, uint64_t seed);

}  // namespace autodist::data
