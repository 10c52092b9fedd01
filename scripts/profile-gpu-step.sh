#!/usr/bin/env bash
# Where a training step's GPU time goes: Nsight Compute (ncu) times every kernel of a few steps in
# the steady state of train_step_bench, and the kernels' times are summed by name beside the
# step's wall time without the profiler. Run on a GPU machine with ncu, after
# `scripts/device-check.sh run` has unpacked the bundle:
#
#   scripts/profile-gpu-step.sh BIN_DIR MODEL BATCH OUT_DIR
#
# Writes OUT_DIR/ncu-<model>.csv (one row per kernel launch) and prints the summary.
set -euo pipefail

bin_dir=$1
model=$2
batch=$3
out_dir=$4
name=$(basename "$model" .onnx)
csv="$out_dir/ncu-$name.csv"
mkdir -p "$out_dir"
# shellcheck source=scripts/machine-libraries.sh
source "$(dirname "${BASH_SOURCE[0]}")/machine-libraries.sh"
use_machine_libraries "$out_dir"

echo "without the profiler: $("$bin_dir/train_step_bench" --model "$model" --batch-size "$batch" \
  --steps 200 --warmup 20 --device cuda)"
# Launches of one steady-state step: those of two steps less those of one (the first step also
# makes one-time launches: cuBLASLt times its candidates on each shape's first product).
count_launches() {  # steps
  ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    "$bin_dir/train_step_bench" --model "$model" --batch-size "$batch" --steps "$1" --warmup 0 \
    --device cuda 2>/dev/null | grep -c '"gpu__time_duration.sum"' || true
}
first=$(count_launches 1)
launches=$(($(count_launches 2) - first))
echo "kernel launches per step: $launches"
# Every launch of steps 11 to 13.
ncu --clock-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip $((first + launches * 9)) --launch-count $((launches * 3)) \
  "$bin_dir/train_step_bench" --model "$model" --batch-size "$batch" --steps 20 --warmup 0 \
  --device cuda >"$csv" 2>/dev/null || true
python3 - "$csv" <<'PY'
import csv, collections, io, sys
text = open(sys.argv[1]).read()
rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"'):]))) if '"ID"' in text else []
total = collections.Counter()
count = collections.Counter()
for r in rows:
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    value = float(r["Metric Value"].replace(",", ""))
    scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(r.get("Metric Unit", "nsecond"), 1e-3)
    name = r["Kernel Name"].split("(")[0][:90]
    total[name] += value * scale
    count[name] += 1
steps = 3
print(f"GPU time per step: {sum(total.values()) / steps:.1f} us over {sum(count.values()) // steps} launches")
for name, us in total.most_common(25):
    print(f"{us / steps:9.1f} us  {count[name] // steps:4d}x  {name}")
PY
