#!/usr/bin/env bash
# All-reduce on emulated networks (docs/networks.md): our Gloo communicator and Open MPI's
# MPI_Allreduce side by side, one rank per host namespace, on shaped links and unshaped in the
# same run. For each size the two alternate, REPEATS times each; the table shows medians.
#
# A shaped run's limit is the lower of two figures: the link's rate, and the bus bandwidth the
# same ranks reached unshaped (the better of ours and MPI's): on 2 cores, 4 ranks cannot fill
# even an unshaped veth. Each bus bandwidth is then given as a share of that limit. Without netem
# (absent on this kernel) the links add no latency, so only bandwidth is measured here.
# Results: docs/performance.md, "Collectives on emulated networks". Needs root.
#
#   scripts/bench-allreduce-network.sh [build-dir]
#   RATES="1gbit 2.5gbit" RANKS="2 4" SIZES="4194304 16777216 67108864" REPEATS=3 ALGORITHM=auto \
#     scripts/bench-allreduce-network.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SELF="$(pwd)/scripts/bench-allreduce-network.sh"

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh

# Inside `autodist network`: host i is AUTODIST_NETWORK_ADDRESS_i in AUTODIST_NETWORK_NETNS_i.
# Prints "n bytes ours_seconds mpi_seconds ours_wire mpi_wire" per rank count and size.
inside() {
  local n bytes i ours_runs mpi_runs subnet
  # Global: the EXIT trap runs after this function has returned.
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  subnet="${AUTODIST_NETWORK_CALLER%.*}.0/24"
  # Open MPI starts its daemons through this "remote shell": into the host's namespace.
  cat >"$work/agent" <<'EOF'
#!/usr/bin/env bash
host="$1"
shift
for ((i = 0; i < AUTODIST_NETWORK_HOSTS; i++)); do
  address="AUTODIST_NETWORK_ADDRESS_$i"
  netns="AUTODIST_NETWORK_NETNS_$i"
  # A host name of its own too (a UTS namespace): Open MPI tells its nodes apart by name.
  if [[ "${!address}" == "$host" ]]; then
    exec nsenter --net="${!netns}" unshare --uts /bin/sh -c "hostname emulated-host-$i && $*"
  fi
done
echo "agent: no emulated host $host" >&2
exit 1
EOF
  chmod +x "$work/agent"
  # The bytes that left hosts 0..n-1 through their links' tbf, which counts every TCP segment
  # with its headers as a wire would (a GSO packet as its segments), ACKs and connection set-up
  # included. Empty on unshaped links: they have no qdisc that counts.
  wire_bytes() {
    local n="$1" i netns sent total=0
    for ((i = 0; i < n; i++)); do
      netns="AUTODIST_NETWORK_NETNS_$i"
      sent="$(nsenter --net="${!netns}" tc -s qdisc show dev eth0 |
        awk '/^qdisc tbf/ { tbf = 1 } tbf && /Sent/ { print $2; exit }')"
      [[ -n "$sent" ]] || return 0
      total=$((total + sent))
    done
    echo "$total"
  }
  # measure WHO N BYTES: runs `WHO N BYTES` and prints "seconds wire" (wire: bytes per rank and
  # all-reduce, the checked one before the timed ones counted too; "-" on unshaped links).
  measure() {
    local who="$1" n="$2" bytes="$3" before after seconds iters
    before="$(wire_bytes "$n")"
    seconds="$("$who" "$n" "$bytes")"
    after="$(wire_bytes "$n")"
    if [[ -z "$before" ]]; then
      echo "$seconds -"
      return
    fi
    # The benchmarks' count: 64 MiB of messages, 3 to 500 all-reduces, and the checked one.
    iters=$(((64 << 20) / bytes))
    ((iters < 3)) && iters=3
    ((iters > 500)) && iters=500
    echo "$seconds $(((after - before) / n / (iters + 1)))"
  }
  # median_of K LINE...: the median of field K of the lines, or "-" where they have none.
  median_of() {
    local k="$1"
    shift
    if [[ "$(cut -d' ' -f"$k" <<<"$1")" == "-" ]]; then
      echo -
    else
      printf "%s\n" "$@" | cut -d' ' -f"$k" | median
    fi
  }
  # shellcheck disable=SC2317  # ours and mpi are called through measure
  ours() {
    local n="$1" bytes="$2" store pids=() rank address netns
    store="$(mktemp -d -p "$work")"
    for ((rank = 0; rank < n; rank++)); do
      address="AUTODIST_NETWORK_ADDRESS_$rank"
      netns="AUTODIST_NETWORK_NETNS_$rank"
      nsenter --net="${!netns}" "$BUILD_DIR/bin/allreduce_bench" --rank "$rank" --size "$n" \
        --store-dir "$store" --bytes "$bytes" --hostname "${!address}" \
        --algorithm "$ALGORITHM" $OURS_ARGS >"$store/out.$rank" 2>&1 &
      pids+=($!)
    done
    wait_ranks "$store" "${pids[@]}"
  }
  # shellcheck disable=SC2317
  mpi() {
    local n="$1" bytes="$2" address
    local hosts=""
    for ((i = 0; i < n; i++)); do
      address="AUTODIST_NETWORK_ADDRESS_$i"
      hosts+="${hosts:+,}${!address}:1"
    done
    # mpi_yield_when_idle: on 2 cores, MPI's busy polling starves the namespaces' packet
    # processing (4 MiB unshaped: 0.17 GB/s polling, 0.87 yielding); this is MPI at its best here.
    # Should Open MPI's start-up through the agent stall (a daemon that never reports), each run
    # has two minutes and a second try; SIGTERM makes mpirun take its daemons down.
    local try
    for try in 1 2; do
      if timeout --kill-after=10 120 mpirun --allow-run-as-root -np "$n" --host "$hosts" \
        --mca plm_rsh_agent "$work/agent" \
        --mca mpi_yield_when_idle 1 --mca plm_rsh_no_tree_spawn 1 --mca btl self,tcp \
        --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
        "$MPI_BENCH" "$bytes" >"$work/mpi.out" 2>&1; then
        value seconds <"$work/mpi.out"
        return
      fi
      echo "bench-allreduce-network: MPI, $n ranks, $bytes bytes: try $try failed" >&2
    done
    cat "$work/mpi.out" >&2
    exit 1
  }
  for n in $RANKS; do
    for bytes in $SIZES; do
      ours_runs=()
      mpi_runs=()
      for ((i = 0; i < REPEATS; i++)); do
        ours_runs+=("$(measure ours "$n" "$bytes")")
        mpi_runs+=("$(measure mpi "$n" "$bytes")")
      done
      echo "$n $bytes $(median_of 1 "${ours_runs[@]}") $(median_of 1 "${mpi_runs[@]}")" \
        "$(median_of 2 "${ours_runs[@]}") $(median_of 2 "${mpi_runs[@]}")"
    done
  done
}

if [[ "${1:-}" == "--inside" ]]; then
  inside
  exit 0
fi

BUILD_DIR="$(realpath "${1:-build}")"
export BUILD_DIR
export RATES="${RATES:-1gbit 2.5gbit}"
export RANKS="${RANKS:-2 4}"
export SIZES="${SIZES:-4194304 16777216 67108864}"
export REPEATS="${REPEATS:-3}"
export ALGORITHM="${ALGORITHM:-auto}"  # ours: auto, ring, halving-doubling, recursive-doubling
export OURS_ARGS="${OURS_ARGS:-}"      # more allreduce_bench flags, e.g. "--spin-us 0"
export MPI_BENCH="$BUILD_DIR/bin/mpi_allreduce_bench"
scripts/setup.sh bench  # Open MPI: only the benchmarks need it
cmake --build "$BUILD_DIR" --target allreduce_bench autodist >/dev/null
mpicc -O2 -Wall -o "$MPI_BENCH" bench/mpi_allreduce_bench.c
hosts=0
for n in $RANKS; do ((n > hosts)) && hosts=$n; done

results="$(mktemp)"
trap 'rm -f "$results"' EXIT
for rate in unshaped $RATES; do
  "$BUILD_DIR/bin/autodist" network --hosts "$hosts" --rate "$rate" -- "$SELF" --inside |
    sed "s/^/$rate /" >>"$results"
done

echo "all-reduce float32 sum on emulated links, one rank per host, $(nproc) cores," \
  "median of $REPEATS runs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "bus bandwidth in GB/s; limit = min(link rate, best unshaped bus bandwidth of the same ranks and size)"
echo "wire: bytes that left each host's link per all-reduce (tbf's count, headers and ACKs too)"
printf "%-9s %5s %10s | %8s %8s | %8s | %10s %10s | %7s | %8s %8s\n" link ranks bytes ours MPI \
  limit "ours/limit" "MPI/limit" ours/MPI "wire ours" "wire MPI"
awk '
  function rate_gbytes(r,   x) {  # "2.5gbit" -> GB/s
    x = r; sub(/gbit$/, "", x)
    if (x != r) return x / 8
    x = r; sub(/mbit$/, "", x)
    return x / 8000
  }
  {
    f = 2 * ($2 - 1) / $2
    ours = $3 / $4 / 1e9 * f; mpi = $3 / $5 / 1e9 * f
    if ($1 == "unshaped") { best[$2, $3] = ours > mpi ? ours : mpi }
    rows[NR] = $0; o[NR] = ours; m[NR] = mpi
  }
  END {
    for (i = 1; i <= NR; i++) {
      split(rows[i], r, " ")
      limit = best[r[2], r[3]]
      if (r[1] != "unshaped" && rate_gbytes(r[1]) < limit) limit = rate_gbytes(r[1])
      printf "%-9s %5d %10d | %8.3f %8.3f | %8.3f | %9.0f%% %9.0f%% | %6.2fx | %9s %8s\n", r[1],
        r[2], r[3], o[i], m[i], limit, 100 * o[i] / limit, 100 * m[i] / limit, o[i] / m[i], r[6],
        r[7]
    }
  }' "$results"
