// All-reduce bandwidth of our Gloo communicator (one rank per process, loopback TCP). The ranks
// rendezvous through gloo's FileStore in a directory they share; scripts/bench-allreduce.sh
// starts them and runs Open MPI's MPI_Allreduce (bench/mpi_allreduce_bench.c, the same sizes,
// iteration counts and timing) beside them.
//
// For each message size rank 0 prints one line:
//   bytes=<B> iters=<k> seconds=<average per all-reduce> algbw_gbps=<B / s / 1e9>
//   busbw_gbps=<algbw * 2(n-1)/n>
// Bus bandwidth is nccl-tests' measure: what each rank's link carries for a bandwidth-optimal
// algorithm, comparable across rank counts.
#include <fmt/format.h>
#include <gloo/rendezvous/file_store.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/collective/gloo/communicator.h"
#include "runtime/common/error.h"

namespace {

using autodist::collective::AllReduceAlgorithm;
using autodist::collective::Communicator;
using autodist::collective::ElementType;
using Clock = std::chrono::steady_clock;

// Timed all-reduces per size: about 64 MiB of messages, at least 3 and at most 500 (the MPI
// benchmark uses the same rule).
int Iterations(uint64_t bytes) {
  return static_cast<int>(std::clamp<uint64_t>((uint64_t{64} << 20) / bytes, 3, 500));
}

// Fills with rank + 1, all-reduces once and checks every element is 1 + 2 + ... + n: the timed
// runs that follow would not notice wrong sums.
void CheckOnce(Communicator& comm, std::vector<float>& data, ElementType type,
               AllReduceAlgorithm algorithm, size_t count) {
  if (type != ElementType::kFloat32) return;
  std::fill(data.begin(), data.begin() + static_cast<ptrdiff_t>(count),
            static_cast<float>(comm.rank() + 1));
  comm.AllReduceSum(data.data(), count, type, algorithm, "bench");
  const int sum = comm.size() * (comm.size() + 1) / 2;  // of rank + 1 over the ranks
  const auto expected = static_cast<float>(sum);
  for (size_t i = 0; i < count; ++i) {
    AD_CHECK(data[i] == expected, kInternal, "rank {}: element {} of {} is {}, expected {}",
             comm.rank(), i, count, data[i], expected);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("All-reduce bandwidth of the Gloo communicator; one process per rank");
  int rank = 0;
  int size = 2;
  std::string store_dir;
  std::vector<uint64_t> sizes;
  std::string algorithm_name = "auto";
  std::string type_name = "float32";
  int64_t timeout_s = 300;
  size_t segment_bytes = 0;
  size_t piece_bytes = 0;
  std::string hostname = "127.0.0.1";
  int64_t pause_us = 0;
  app.add_option("--rank", rank, "this process's rank")->required();
  app.add_option("--size", size, "number of processes")->required();
  app.add_option("--store-dir", store_dir, "directory for gloo's FileStore, shared by the ranks")
      ->required();
  app.add_option("--bytes", sizes, "message sizes in bytes")->required();
  app.add_option("--algorithm", algorithm_name,
                 "auto, ring, halving-doubling, recursive-doubling or direct")
      ->check(CLI::IsMember({"auto", "ring", "halving-doubling", "recursive-doubling", "direct"}));
  app.add_option("--type", type_name, "float32 or float16")
      ->check(CLI::IsMember({"float32", "float16"}));
  app.add_option("--timeout-s", timeout_s, "collective timeout");
  app.add_option("--segment-bytes", segment_bytes, "ring segment size (0: the default)");
  app.add_option("--piece-bytes", piece_bytes, "halving-doubling piece size (0: the default)");
  int64_t spin_us = -1;
  app.add_option("--spin-us", spin_us, "exchange spin before sleeping (-1: the default)");
  app.add_option("--pause-us", pause_us,
                 "sleep this long before each all-reduce (a training step's compute), timing "
                 "the all-reduces only: the latency of a collective that finds its peers idle");
  app.add_option("--hostname", hostname,
                 "this rank's address the others reach it at (an emulated network's host)");
  CLI11_PARSE(app, argc, argv);

  try {
    const std::map<std::string, AllReduceAlgorithm> algorithms = {
        {"auto", AllReduceAlgorithm::kAuto},
        {"ring", AllReduceAlgorithm::kRing},
        {"halving-doubling", AllReduceAlgorithm::kHalvingDoubling},
        {"recursive-doubling", AllReduceAlgorithm::kRecursiveDoubling},
        {"direct", AllReduceAlgorithm::kDirect}};
    const AllReduceAlgorithm algorithm = algorithms.at(algorithm_name);
    const ElementType type = type_name == "float16" ? ElementType::kFloat16 : ElementType::kFloat32;
    autodist::collective::GlooOptions options;
    options.rank = rank;
    options.size = size;
    options.store = std::make_shared<gloo::rendezvous::FileStore>(store_dir);
    options.timeout = std::chrono::seconds(timeout_s);
    options.hostname = hostname;
    if (segment_bytes > 0) options.ring_segment_bytes = segment_bytes;
    if (piece_bytes > 0) options.halving_doubling_piece_bytes = piece_bytes;
    if (spin_us >= 0) options.exchange_spin = std::chrono::microseconds(spin_us);
    const std::unique_ptr<Communicator> comm = autodist::collective::MakeGlooCommunicator(options);

    for (const uint64_t bytes : sizes) {
      const size_t count = bytes / autodist::collective::ElementBytes(type);
      std::vector<float> data(bytes / sizeof(float) + 1, 0.0F);  // `bytes` of either type
      CheckOnce(*comm, data, type, algorithm, count);
      std::fill(data.begin(), data.end(), 0.0F);  // sums of zeros stay finite however many
      const int iters = Iterations(bytes);
      comm->Barrier("bench-start");
      double total = 0;
      const int runs = pause_us > 0 ? std::min(iters, 100) : iters;
      const Clock::time_point start = Clock::now();
      for (int i = 0; i < runs; ++i) {
        if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
        const Clock::time_point one = Clock::now();
        comm->AllReduceSum(data.data(), count, type, algorithm, "bench");
        total += std::chrono::duration<double>(Clock::now() - one).count();
      }
      const double seconds =
          pause_us > 0 ? total / runs
                       : std::chrono::duration<double>(Clock::now() - start).count() / runs;
      if (rank == 0) {
        const double algbw = static_cast<double>(bytes) / seconds / 1e9;
        fmt::print("bytes={} iters={} seconds={:.9f} algbw_gbps={:.4f} busbw_gbps={:.4f}\n", bytes,
                   runs, seconds, algbw, algbw * 2.0 * (size - 1) / size);
        std::fflush(stdout);
      }
    }
    comm->Barrier("bench-end");
  } catch (const autodist::Error& error) {
    fmt::print(stderr, "allreduce_bench: rank {}: error: {}\n", rank, error.what());
    return 1;
  }
  return 0;
}
