#!/usr/bin/env bash
# What recording a timeline costs: the Fashion-MNIST examples (examples/fashion-mnist/job-ps.yaml,
# 2 workers + 1 parameter server, and job-allreduce.yaml, 2 workers) trained by `autodist run`
# without and with --timeline, alternated run by run, $RUNS runs each; the step rate is each
# worker's steps / seconds of its training loop (its result JSON), mean of the workers. Prints the
# median rate of each and the step-time increase, with the load average.
#
#   scripts/bench-timeline.sh [build-dir] [steps] [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
BUILD_DIR="${1:-build}"
STEPS="${2:-600}"
RUNS="${3:-5}"
AUTODIST="$BUILD_DIR/bin/autodist"
PY=/usr/bin/python3
[[ -x "$AUTODIST" && -x "$BUILD_DIR/bin/autodist-runtime" ]] || {
  echo "bench-timeline: build $BUILD_DIR first (autodist, autodist-runtime)" >&2
  exit 2
}
[[ -d /usr/share/datasets/fashion-mnist ]] || {
  echo "bench-timeline: scripts/setup.sh installs dataset-fashion-mnist" >&2
  exit 2
}
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }

# The example cut to $STEPS steps, without checkpoints or export (they are not what is measured).
manifest() {
  local example="$1" out="$2"
  sed -e "s/^    epochs: .*/    steps: $STEPS/" -e '/^    checkpoint:/,/^      intervalSteps:/d' \
    -e '/^    exportPath:/d' -e "s|path: fmnist_|path: $ROOT/examples/fashion-mnist/fmnist_|" \
    "$ROOT/examples/fashion-mnist/$example" >"$out"
}

# rate MANIFEST [--timeline FILE]: the mean step rate of the workers.
rate() {
  local manifest="$1"
  shift
  local logs="$WORK/logs-$RANDOM"
  "$AUTODIST" run "$manifest" --threads 1 --log-dir "$logs" "$@" >"$logs.out" 2>&1 || {
    cat "$logs.out" >&2
    exit 1
  }
  "$PY" - "$logs" <<'PY'
import glob, json, sys
rates = []
for path in glob.glob(f"{sys.argv[1]}/worker-*.result.json"):
    r = json.load(open(path))
    rates.append(r["steps"] / r["seconds"])
print(f"{sum(rates) / len(rates):.2f}")
PY
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf "%-10s %8s %12s %12s %10s  %s\n" example steps "off st/s" "on st/s" "step +%" "load average (start, end)"
for example in job-ps.yaml job-allreduce.yaml; do
  manifest "$example" "$WORK/$example"
  start_load="$(load)"
  off=()
  on=()
  for ((i = 0; i < RUNS; i++)); do
    off+=("$(rate "$WORK/$example")")
    on+=("$(rate "$WORK/$example" --timeline "$WORK/trace-$i.json")")
  done
  off_median="$(median "${off[@]}")"
  on_median="$(median "${on[@]}")"
  awk -v e="${example%.yaml}" -v s="$STEPS" -v off="$off_median" -v on="$on_median" \
    -v l="$start_load; $(load)" \
    'BEGIN { printf "%-10s %8d %12.1f %12.1f %9.1f%%  %s\n", e, s, off, on, (off / on - 1) * 100, l }'
  echo "  runs off: ${off[*]}; on: ${on[*]}"
done
