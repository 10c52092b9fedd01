#!/usr/bin/env bash
# All-reduce bandwidth (float32 sum) of our Gloo communicator vs Open MPI's MPI_Allreduce, with 2
# and 4 processes on loopback TCP, in one run. For every size the two alternate, REPEATS times
# each, so both see the same machine load; the table shows the median of the repeats. Bus
# bandwidth = algbw * 2(n-1)/n (nccl-tests). Results: docs/performance.md, "Collectives: Gloo vs
# Open MPI".
#
#   scripts/bench-allreduce.sh [build-dir]
#   RANKS="2 4" SIZES="4096 1048576" REPEATS=3 ALGORITHM=auto scripts/bench-allreduce.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
BUILD_DIR="${1:-build}"
RANKS="${RANKS:-2 4}"
# 4 KiB ... 256 MiB in powers of 4.
SIZES="${SIZES:-4096 16384 65536 262144 1048576 4194304 16777216 67108864 268435456}"
REPEATS="${REPEATS:-3}"
ALGORITHM="${ALGORITHM:-auto}"

scripts/setup.sh bench  # Open MPI: only this benchmark needs it
cmake --build "$BUILD_DIR" --target allreduce_bench >/dev/null
MPI_BENCH="$BUILD_DIR/bin/mpi_allreduce_bench"
mpicc -O2 -Wall -o "$MPI_BENCH" bench/mpi_allreduce_bench.c

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# Seconds per all-reduce of our communicator: n processes, rendezvous through a FileStore.
ours() {
  local n="$1" bytes="$2" store pids=() rank
  store="$(mktemp -d -p "$WORK")"
  for ((rank = 0; rank < n; rank++)); do
    "$BUILD_DIR/bin/allreduce_bench" --rank "$rank" --size "$n" --store-dir "$store" \
      --bytes "$bytes" --algorithm "$ALGORITHM" >"$store/out.$rank" 2>&1 &
    pids+=($!)
  done
  wait_ranks "$store" "${pids[@]}"
}

# Seconds per MPI_Allreduce: TCP over the loopback interface only (no shared memory), as ours.
mpi() {
  local n="$1" bytes="$2"
  mpirun --oversubscribe --allow-run-as-root -np "$n" --mca btl self,tcp \
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "$MPI_BENCH" "$bytes" | value seconds
}

echo "all-reduce float32 sum, loopback TCP, $(nproc) cores, median of $REPEATS runs, ours: $ALGORITHM"
printf "%5s %10s | %12s %12s | %12s %12s | %7s\n" ranks bytes "ours algbw" "ours busbw" \
  "MPI algbw" "MPI busbw" ours/MPI
printf "%5s %10s | %12s %12s | %12s %12s | %7s\n" "" "" "GB/s" "GB/s" "GB/s" "GB/s" ""
for n in $RANKS; do
  for bytes in $SIZES; do
    ours_runs=()
    mpi_runs=()
    for ((i = 0; i < REPEATS; i++)); do
      ours_runs+=("$(ours "$n" "$bytes")")
      mpi_runs+=("$(mpi "$n" "$bytes")")
    done
    ours_s=$(printf "%s\n" "${ours_runs[@]}" | median)
    mpi_s=$(printf "%s\n" "${mpi_runs[@]}" | median)
    awk -v n="$n" -v b="$bytes" -v o="$ours_s" -v m="$mpi_s" 'BEGIN {
      f = 2 * (n - 1) / n
      printf "%5d %10d | %12.3f %12.3f | %12.3f %12.3f | %6.2fx\n", n, b, b / o / 1e9,
        b / o / 1e9 * f, b / m / 1e9, b / m / 1e9 * f, m / o
    }'
  done
done
