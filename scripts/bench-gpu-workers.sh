#!/usr/bin/env bash
# GPU workers in a job against PyTorch DDP, on one GPU (issue 16): `autodist run` with 2 workers of
# gpusPerWorker: 1, the AllReduce builder (each worker's replica on the GPU, gradients through host
# memory to our all-reduce), beside bench/pytorch_ddp_step.py --device cuda (2 processes, each
# replica on GPU 0, DDP over gloo), on Fashion-MNIST; ours and PyTorch alternate, 5 runs each,
# medians. Needs a GPU and python3 with torch (the GPU machine's image); scripts/device-check.sh
# run-data runs it from its bundle.
#
#   scripts/bench-gpu-workers.sh BIN_DIR DATA_DIR OUT_DIR [STEPS]
#
# BIN_DIR holds autodist and autodist-runtime; DATA_DIR Fashion-MNIST's four .gz files. Our rate:
# each worker's result (steps over the seconds of its training loop), the mean of the two;
# PyTorch's: its loop after 20 warm-up steps. Writes OUT_DIR/bench-gpu-workers.md.
set -euo pipefail
bin_dir=$1
data_dir=$2
out_dir=$3
steps=${4:-500}
here=$(cd "$(dirname "$0")/.." && pwd)
runs=5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out_dir"
device=$(python3 -c 'import torch; print(torch.cuda.get_device_name(0))')

ours() {  # model batch: prints steps/s
  local model=$1 batch=$2 name="gpu-workers-$RANDOM"
  cat >"$work/$name.yaml" <<YAML
apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: $name
spec:
  model:
    path: $here/examples/fashion-mnist/fmnist_$model.onnx
  data:
    format: fashion-mnist
    dir: $data_dir
    batchSizePerReplica: $batch
  training:
    steps: $steps
    optimizer:
      name: sgd
      lr: 0.01
    logIntervalSteps: $steps
  strategy:
    builder: AllReduce
  resources:
    workers: 2
    gpusPerWorker: 1
    parameterServers: 0
YAML
  "$bin_dir/autodist" run "$work/$name.yaml" --threads 1 --log-dir "$work/$name" \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; return 1; }
  python3 - "$work/$name" <<'PY'
import json, sys
results = [json.load(open(f"{sys.argv[1]}/worker-{r}.result.json")) for r in (0, 1)]
print(f'{sum(r["steps"] / r["seconds"] for r in results) / len(results):.2f}')
PY
}

torch_ddp() {  # model batch: prints steps/s
  python3 "$here/bench/pytorch_ddp_step.py" --model "$1" --batch-size "$2" --steps "$steps" \
    --device cuda --data "$data_dir" | sed -n 's/.*steps_per_second=\([0-9.]*\).*/\1/p'
}

{
  echo "| 2 GPU workers on one GPU, steps/s | ours | PyTorch DDP (gloo) | ours / PyTorch | device |"
  echo "| --- | --- | --- | --- | --- |"
} >"$out_dir/bench-gpu-workers.md"
for row in "mlp 64" "cnn 64"; do
  read -r model batch <<<"$row"
  : >"$work/rates"
  for ((i = 0; i < runs; i++)); do
    echo "ours $(ours "$model" "$batch")" >>"$work/rates"
    echo "torch $(torch_ddp "$model" "$batch")" >>"$work/rates"
  done
  cp "$work/rates" "$out_dir/bench-gpu-workers-$model.txt"
  python3 - "$work/rates" "$model" "$batch" "$device" >>"$out_dir/bench-gpu-workers.md" <<'PY'
import statistics, sys
rates = {"ours": [], "torch": []}
for line in open(sys.argv[1]):
    who, value = line.split()
    rates[who].append(float(value))
ours, torch = statistics.median(rates["ours"]), statistics.median(rates["torch"])
print(f"| {sys.argv[2]}, 2x{sys.argv[3]}, AllReduce (median of {len(rates['ours'])}) | "
      f"{ours:.1f} | {torch:.1f} | {ours / torch:.3f} | {sys.argv[4]} |")
PY
done
cat "$out_dir/bench-gpu-workers.md"
