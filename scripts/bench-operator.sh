#!/usr/bin/env bash
# The operator at scale (docs/performance.md "Operator at scale"): N AutoDistJobs of 7 workers +
# 1 parameter server (PS builder, the Fashion-MNIST MLP) created against the API-server test
# double, with build/bin/autodist-operator (--workers 8) running as its own process. No node
# agent: pods stay Pending, so what is measured is the operator. Two runs: jobs created as fast
# as one client can, then at a fixed rate. Prints one table row per run.
#
#   scripts/bench-operator.sh [build-dir] [jobs] [fixed rate, jobs/s] [operator workers]
#   scripts/bench-operator.sh build 200          # a quick run (under a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
JOBS="${2:-1000}"
RATE="${3:-100}"
WORKERS="${4:-8}"
BENCH="$BUILD_DIR/bin/operator_scale_bench"
for binary in "$BENCH" "$BUILD_DIR/bin/autodist-operator"; do
  if [[ ! -x "$binary" ]]; then
    echo "bench-operator: $binary is missing: cmake --build $BUILD_DIR --target operator_scale_bench" \
         "(the tests must be configured: the benchmark links the API-server double)" >&2
    exit 2
  fi
done

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
status=0
"$BENCH" --jobs "$JOBS" --rate 0 --operator-workers "$WORKERS" --label "max" --restart \
  --json "$WORK/max.json" || status=1
"$BENCH" --jobs "$JOBS" --rate "$RATE" --operator-workers "$WORKERS" --label "${RATE}/s" \
  --json "$WORK/rate.json" || status=1

python3 - "$WORK/max.json" "$WORK/rate.json" <<'EOF'
import json, sys

def f(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"

rows = []
for path in sys.argv[1:]:
    try:
        with open(path) as file:
            rows.append(json.load(file))
    except (OSError, ValueError):
        pass
print()
print("| creation | jobs × pods | creates/s | first status p50 / p99 [ms] | all pods p50 / p99 / max [ms] "
      "| wall [s] | reconciles (per job) | reconciles/s | jobs/s | mean reconcile [ms] | API req/job "
      "| operator RSS idle / peak [MB] | CPU operator / double+client [s] |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for r in rows:
    s, p = r["toFirstStatusMs"], r["toAllPodsMs"]
    print(f"| {r['label']} | {r['jobs']} × {r['podsPerJob']} | {f(r['createRatePerSecond'], 0)} "
          f"| {f(s['p50'])} / {f(s['p99'])} | {f(p['p50'])} / {f(p['p99'])} / {f(p['max'])} "
          f"| {f(r['wallSeconds'], 2)} | {r['reconciles']:.0f} ({f(r['reconcilesPerJob'], 2)}) "
          f"| {f(r['reconcilesPerSecond'], 0)} | {f(r.get('jobsPerSecond'), 0)} "
          f"| {f(r['meanReconcileMs'], 2)} "
          f"| {f(r['operatorRequestsPerJob'], 1)} "
          f"| {f(r['operatorIdleRssMb'])} / {f(r['operatorPeakRssMb'])} "
          f"| {f(r['operatorCpuSeconds'], 2)} / {f(r['benchProcessCpuSeconds'], 2)} |")
for r in rows:
    a = r.get("restart")
    if a:
        print(f"\n{r['label']}: a restarted operator was ready after {f(a['readySeconds'], 2)} s, "
              f"then reconciled every existing job ({a['reconciles']:.0f} reconciles) in "
              f"{f(a['seconds'], 2)} s = {f(a['reconcilesPerSecond'], 0)} reconciles/s")
print()
print("targets: all pods p99 < 1000 ms, reconciles/s >= 200, operator peak RSS < 100 MB")
EOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
