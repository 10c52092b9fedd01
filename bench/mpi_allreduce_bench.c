/* Open MPI's MPI_Allreduce (float32 sum, in place) with the same message sizes, iteration counts
 * and timing as bench/allreduce_bench.cc, so scripts/bench-allreduce.sh can set them side by
 * side. Plain C, built by the script with mpicc: the project's build never needs MPI.
 *
 *   mpirun -np N mpi_allreduce_bench BYTES...
 *
 * Rank 0 prints "bytes=<B> iters=<k> seconds=<s> algbw_gbps=<> busbw_gbps=<>" per size. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* About 64 MiB of messages per size, at least 3 and at most 500 all-reduces. */
static int iterations(uint64_t bytes) {
  uint64_t iters = ((uint64_t)64 << 20) / bytes;
  if (iters < 3) iters = 3;
  if (iters > 500) iters = 500;
  return (int)iters;
}

/* Fills with rank + 1, all-reduces once and checks the sums, as the Gloo benchmark does. */
static int check_once(float* data, size_t count, int rank, int size) {
  for (size_t i = 0; i < count; ++i) data[i] = (float)(rank + 1);
  MPI_Allreduce(MPI_IN_PLACE, data, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const float expected = (float)(size * (size + 1) / 2);
  for (size_t i = 0; i < count; ++i) {
    if (data[i] != expected) {
      fprintf(stderr, "mpi_allreduce_bench: rank %d: element %zu is %g, expected %g\n", rank, i,
              (double)data[i], (double)expected);
      return 0;
    }
  }
  return 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpi_allreduce_bench BYTES...\n");
    MPI_Finalize();
    return 2;
  }
  for (int a = 1; a < argc; ++a) {
    const uint64_t bytes = strtoull(argv[a], NULL, 10);
    const size_t count = bytes / sizeof(float);
    float* data = malloc(count * sizeof(float) + sizeof(float));
    if (data == NULL || !check_once(data, count, rank, size)) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(data, 0, count * sizeof(float)); /* sums of zeros stay finite however many */
    const int iters = iterations(bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(MPI_IN_PLACE, data, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    const double seconds = (MPI_Wtime() - start) / iters;
    if (rank == 0) {
      const double algbw = (double)bytes / seconds / 1e9;
      printf("bytes=%llu iters=%d seconds=%.9f algbw_gbps=%.4f busbw_gbps=%.4f\n",
             (unsigned long long)bytes, iters, seconds, algbw, algbw * 2.0 * (size - 1) / size);
      fflush(stdout);
    }
    free(data);
  }
  MPI_Finalize();
  return 0;
}
