#!/usr/bin/env bash
# GPU workers in a job against PyTorch DDP, on one GPU (issue 16), on Fashion-MNIST; ours and
# PyTorch alternate, 5 runs each, medians:
#
# * `autodist run` with 2 workers of gpusPerWorker: 1, the AllReduce builder: both replicas on
#   the one GPU, which NCCL refuses, so gradients go through host memory to Gloo; beside
#   bench/pytorch_ddp_step.py --device cuda (2 processes on GPU 0, DDP over gloo);
# * 1 worker of gpusPerWorker: 1: the all-reduce on the GPU over NCCL (one rank), with the
#   optimizer there; beside DDP with 1 process over nccl. Needs a GPU and python3 with torch (the GPU machine's image); scripts/device-check.sh
# run-data runs it from its bundle. Then one more run of the NCCL path with a fusion group per
# variable records a timeline (OUT_DIR/gpu-workers-nccl.trace.json, for Perfetto) and counts the
# overlap of the all-reduce with backward twice:
#
# * on the host's clock: the backward passes during which two or more groups were handed to NCCL
#   (the "reduce group-N" spans of the communication thread), which shows the reductions
#   starting while backward is still being queued, not what the GPU did;
# * on the device's clock: the NCCL communicator's CUDA event times ("nccl all-reduce group-N" on
#   the "cuda:N stream comm" track, with each group's ready time on the tensor stream,
#   runtime/observe/device_spans.h): the steps in which a reduction started on the GPU before
#   the step's last group was ready there, i.e. while backward was still computing, and the
#   microseconds of reduction before that (the rule of runtime/observe/device_overlap.h).
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

ours() {  # model batch workers [timeline]: prints steps/s
  local model=$1 batch=$2 workers=$3 timeline=${4:-} name="gpu-workers-$RANDOM"
  local options="" recorded=()
  if [[ -n "$timeline" ]]; then
    options="    options: {chunkSize: 1}"
    recorded=(--timeline "$timeline")
  fi
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
$options
  resources:
    workers: $workers
    gpusPerWorker: 1
    parameterServers: 0
YAML
  "$bin_dir/autodist" run "$work/$name.yaml" --threads 1 --log-dir "$work/$name" "${recorded[@]}" \
    >"$work/$name.out" 2>&1 || { cat "$work/$name.out" >&2; return 1; }
  python3 - "$work/$name" "$workers" <<'PY'
import json, sys
results = [json.load(open(f"{sys.argv[1]}/worker-{r}.result.json")) for r in range(int(sys.argv[2]))]
print(f'{sum(r["steps"] / r["seconds"] for r in results) / len(results):.2f}')
PY
}

torch_ddp() {  # model batch world backend: prints steps/s
  python3 "$here/bench/pytorch_ddp_step.py" --model "$1" --batch-size "$2" --steps "$steps" \
    --world "$3" --backend "$4" --device cuda --data "$data_dir" |
    sed -n 's/.*steps_per_second=\([0-9.]*\).*/\1/p'
}

{
  echo "| GPU workers on one GPU, steps/s | ours | PyTorch DDP | ours / PyTorch | device |"
  echo "| --- | --- | --- | --- | --- |"
} >"$out_dir/bench-gpu-workers.md"
# model batch workers: our path; DDP's processes and backend
for row in "mlp 64 2 gloo" "cnn 64 2 gloo" "mlp 64 1 nccl" "cnn 64 1 nccl"; do
  read -r model batch workers backend <<<"$row"
  : >"$work/rates"
  for ((i = 0; i < runs; i++)); do
    echo "ours $(ours "$model" "$batch" "$workers")" >>"$work/rates"
    echo "torch $(torch_ddp "$model" "$batch" "$workers" "$backend")" >>"$work/rates"
  done
  cp "$work/rates" "$out_dir/bench-gpu-workers-$model-$workers.txt"
  python3 - "$work/rates" "$model" "$batch" "$device" "$workers" "$backend" \
    >>"$out_dir/bench-gpu-workers.md" <<'PY'
import statistics, sys
rates = {"ours": [], "torch": []}
for line in open(sys.argv[1]):
    who, value = line.split()
    rates[who].append(float(value))
ours, torch = statistics.median(rates["ours"]), statistics.median(rates["torch"])
workers, backend = int(sys.argv[5]), sys.argv[6]
path = "host memory, Gloo" if workers > 1 else "NCCL on the GPU"
print(f"| {sys.argv[2]}, {workers}x{sys.argv[3]}, AllReduce, ours: {path}; DDP: {backend} "
      f"(median of {len(rates['ours'])}) | {ours:.1f} | {torch:.1f} | {ours / torch:.3f} | "
      f"{sys.argv[4]} |")
PY
done
cat "$out_dir/bench-gpu-workers.md"

trace="$out_dir/gpu-workers-nccl.trace.json"
echo "NCCL path with a group per variable: $(ours mlp 64 1 "$trace") steps/s, timeline $trace"
python3 - "$trace" <<'PY' | tee -a "$out_dir/bench-gpu-workers.md"
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
backward = [(e["pid"], e["ts"], e["ts"] + e["dur"]) for e in events if e["name"] == "backward"]
starts = [(e["pid"], e["ts"]) for e in events if e["name"].startswith("reduce group-")]
passes = sum(1 for pid, begin, end in backward
             if sum(1 for p, t in starts if p == pid and begin < t < end) >= 2)
print(f"\nOverlap on the host's clock: {passes} of {len(backward)} backward passes handed two or "
      "more groups to NCCL before backward was queued to its end.")

# The device's clock: each all-reduce's start and end on the communication stream and its
# group's ready time on the tensor stream; a step ends where a group comes again.
device = sorted(((e["args"]["ready_us"], e["ts"], e["ts"] + e["dur"], e["name"].split()[-1])
                 for e in events
                 if e.get("cat") == "device" and e["name"].startswith("nccl all-reduce ")
                 and "ready_us" in e.get("args", {})))
steps, seen = [], set()
for ready, start, end, tag in device:
    if not steps or tag in seen:
        steps.append([])
        seen = set()
    seen.add(tag)
    steps[-1].append((ready, start, end))
overlapped_steps, overlapped_us = 0, 0
for step in steps:
    last_ready = max(ready for ready, _, _ in step)
    early = [(start, end) for _, start, end in step if start < last_ready]
    overlapped_steps += bool(early)
    overlapped_us += sum(min(end, last_ready) - start for start, end in early)
if steps:
    print(f"Overlap on the device's clock (CUDA events): {overlapped_steps} of {len(steps)} steps "
          f"reduced a group on the GPU while backward was still computing there, "
          f"{overlapped_us / len(steps):.1f} us of reduction per step before the last group was "
          "ready.")
else:
    print("Overlap on the device's clock: the timeline holds no device spans (a build without "
          "NCCL's device times?).")
PY
