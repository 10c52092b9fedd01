// AUTODIST_HOST_DEVICE marks a function that compiles for the CPU and, under nvcc, for the GPU as
// well: per-element math written once and run by both backends (and tested on the CPU in CI,
// where there is no GPU).
#pragma once

#ifdef __CUDACC__
#define AUTODIST_HOST_DEVICE __host__ __device__
#else
#define AUTODIST_HOST_DEVICE
#endif
