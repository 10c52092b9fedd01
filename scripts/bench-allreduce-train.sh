#!/usr/bin/env bash
# All-reduce data-parallel training, ours (`autodist run`, AllReduce builder, 2 workers, no
# parameter server) beside PyTorch 1.13 DistributedDataParallel over gloo
# (bench/pytorch_ddp_step.py, 2 processes), on Fashion-MNIST, 2 processes x 1 thread each.
# Ours and PyTorch alternate row by row, so both see the same machine load.
#
#   1. step rate, no compression: MLP and CNN at global batch 2x32 and 2x64, SGD lr 0.01;
#   2. PowerSGD r = 1, 2, 4 (start step $START) vs DDP's powerSGD_hook: step rate and test
#      accuracy after $ACC_STEPS steps at 2x32 (938 = one epoch), Adam lr 1e-3;
#   3. every compressor of ours on the MLP, same settings as 2: bytes on the wire, rate, accuracy.
#
# Our rate: each worker's result JSON (steps / seconds of its training loop: start-up, Gloo
# rendezvous and the final evaluation excluded), mean of the two workers, which run in lockstep.
# PyTorch's: its training loop after a warm-up of 20 steps (process start excluded).
#
#   scripts/bench-allreduce-train.sh [build-dir] [mlp-steps] [cnn-steps] [acc-steps] [start-step]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
BUILD_DIR="${1:-build}"
MLP_STEPS="${2:-500}"
CNN_STEPS="${3:-150}"
ACC_STEPS="${4:-938}"
START="${5:-100}"
AUTODIST="$BUILD_DIR/bin/autodist"
PY=/usr/bin/python3
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
require_training_peer bench-allreduce-train "$BUILD_DIR" "$PY"
WORK="$(mktemp -d)"
# The machine is shared: the load average tells how much of it the two processes had.
load() { echo "(load average $(cut -d' ' -f1-3 /proc/loadavg))"; }
trap 'rm -rf "$WORK"' EXIT

# ours MODEL PER_REPLICA STEPS OPTIMIZER LR SPEC COMPRESSOR [EXTRA_OPTION...]
# Runs one job; prints "steps_per_s wire_bytes_per_step compression accuracy test_loss".
# AUTO is the all-reduce for CPU (the manifest default NCCL runs as AUTO without GPUs).
ours() {
  local model="$1" per_replica="$2" steps="$3" optimizer="$4" lr="$5" spec="$6" compressor="$7"
  shift 7
  local name="bench-ar-$RANDOM"
  {
    cat <<EOF
apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: $name
spec:
  model:
    path: $ROOT/examples/fashion-mnist/fmnist_$model.onnx
    loss: loss
    logits: logits
    labels: label
  data:
    format: fashion-mnist
    batchSizePerReplica: $per_replica
  training:
    steps: $steps
    optimizer:
      name: $optimizer
      lr: $lr
    logIntervalSteps: $steps
  strategy:
    builder: AllReduce
    options:
      allReduceSpec: $spec
      compressor: $compressor
EOF
    for option in "$@"; do echo "      $option"; done
    cat <<EOF
  resources:
    workers: 2
    replicasPerWorker: 1
    parameterServers: 0
EOF
  } >"$WORK/$name.yaml"
  local out
  out="$("$AUTODIST" run "$WORK/$name.yaml" --threads 1 --log-dir "$WORK/$name" 2>&1)" || {
    echo "$out" >&2
    exit 1
  }
  "$PY" - "$WORK/$name" <<'EOF'
import json, sys
results = [json.load(open(f"{sys.argv[1]}/worker-{r}.result.json")) for r in (0, 1)]
rate = sum(r["steps"] / r["seconds"] for r in results) / len(results)
chief = results[0]
ar = chief["allReduce"]
print(f'{rate:.1f} {ar["bytesSent"] / chief["steps"]:.0f} {ar["bytesReduced"] / ar["bytesSent"]:.2f}'
      f' {chief.get("accuracy", 0):.4f} {chief.get("evalLoss", 0):.4f}')
EOF
}

# torch MODEL PER_REPLICA STEPS [ARGS...]: prints "steps_per_s accuracy test_loss".
torch_ddp() {
  local model="$1" per_replica="$2" steps="$3"
  shift 3
  "$PY" bench/pytorch_ddp_step.py --model "$model" --batch-size "$per_replica" --steps "$steps" \
    "$@" | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                  printf "%s %s %s\n", v["steps_per_second"], v["accuracy"] ? v["accuracy"] : "-",
                    v["test_loss"] ? v["test_loss"] : "-" }'
}

echo "== 1. step rate, no compression (SGD lr 0.01; ours AUTO and RING; $MLP_STEPS MLP / $CNN_STEPS CNN steps) $(load)"
printf "%-5s %-7s %11s %11s %11s %8s %10s %10s\n" model global "ours st/s" "ours RING" \
  "torch st/s" "ratio" "ours ms" "torch ms"
for row in "mlp 32 $MLP_STEPS" "mlp 64 $MLP_STEPS" "cnn 32 $CNN_STEPS" "cnn 64 $CNN_STEPS"; do
  read -r model per_replica steps <<<"$row"
  read -r ours_rate _ <<<"$(ours "$model" "$per_replica" "$steps" sgd 0.01 AUTO NoneCompressor)"
  read -r ring_rate _ <<<"$(ours "$model" "$per_replica" "$steps" sgd 0.01 RING NoneCompressor)"
  read -r torch_rate _ <<<"$(torch_ddp "$model" "$per_replica" "$steps")"
  awk -v m="$model" -v b="2x$per_replica" -v o="$ours_rate" -v r="$ring_rate" -v t="$torch_rate" \
    'BEGIN { printf "%-5s %-7s %11.1f %11.1f %11.1f %7.2fx %10.2f %10.2f\n", m, b, o, r, t, o / t,
             1000 / o, 1000 / t }'
done

echo
echo "== 2. PowerSGD vs DDP powerSGD_hook (MLP 2x32, Adam lr 1e-3, $ACC_STEPS steps, start step $START) $(load)"
printf "%-14s %11s %11s %8s %10s %10s %12s\n" compressor "ours st/s" "torch st/s" ratio \
  "ours acc" "torch acc" "ours wire/st"
declare -A OURS
for rank in 0 1 2 4; do
  if [[ $rank == 0 ]]; then
    label=none; result="$(ours mlp 32 "$ACC_STEPS" adam 0.001 AUTO NoneCompressor)"
  else
    label="PowerSGD r=$rank"
    result="$(ours mlp 32 "$ACC_STEPS" adam 0.001 AUTO PowerSGDCompressor "powersgdRank: $rank" \
      "powersgdStartStep: $START")"
  fi
  OURS[$label]="$result"
  read -r ours_rate wire _ ours_acc _ <<<"$result"
  read -r torch_rate torch_acc _ <<<"$(torch_ddp mlp 32 "$ACC_STEPS" --optimizer adam --lr 0.001 \
    --powersgd-rank "$rank" --powersgd-start "$START" --eval)"
  awk -v l="$label" -v o="$ours_rate" -v t="$torch_rate" -v oa="$ours_acc" -v ta="$torch_acc" \
    -v w="$wire" 'BEGIN { printf "%-14s %11.1f %11.1f %7.2fx %10s %10s %9.1f KiB\n", l, o, t, o / t,
                          oa, ta, w / 1024 }'
done

echo
echo "== 3. our compressors (MLP 2x32, Adam lr 1e-3, $ACC_STEPS steps; PowerSGD from step $START) $(load)"
for fraction in 0.01 0.1; do
  OURS["TopK-EF $fraction"]="$(ours mlp 32 "$ACC_STEPS" adam 0.001 AUTO TopKCompressorEF \
    "topkFraction: $fraction")"
done
for kind in HorovodCompressor HorovodCompressorEF; do
  OURS[$kind]="$(ours mlp 32 "$ACC_STEPS" adam 0.001 AUTO "$kind")"
done
printf "%-20s %9s %9s %14s %11s %9s %9s\n" compressor "steps/s" "ms/step" "wire KiB/step" \
  compression accuracy "test loss"
for label in none HorovodCompressor HorovodCompressorEF "PowerSGD r=1" "PowerSGD r=2" \
  "PowerSGD r=4" "TopK-EF 0.01" "TopK-EF 0.1"; do
  read -r rate wire ratio acc loss <<<"${OURS[$label]}"
  awk -v l="$label" -v r="$rate" -v w="$wire" -v c="$ratio" -v a="$acc" -v s="$loss" \
    'BEGIN { printf "%-20s %9.1f %9.2f %14.1f %10.2fx %9s %9s\n", l, r, 1000 / r, w / 1024, c, a, s }'
done
echo "steps/s: ours from the workers' training loops (result JSON), PyTorch after 20 warm-up steps;" \
  "ratio = ours / PyTorch; wire = bytes this worker sent per step (all steps, PowerSGD's first" \
  "$START uncompressed); compression = float32 bytes reduced / bytes sent; end $(load)"
