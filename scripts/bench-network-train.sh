#!/usr/bin/env bash
# Data-parallel training on emulated networks (docs/networks.md): ours (`autodist run --network`,
# AllReduce, AUTO) beside PyTorch 1.13 DistributedDataParallel over gloo
# (bench/pytorch_ddp_step.py, one rank per host namespace), without compression and with
# PowerSGD rank 1 (ours: PowerSGDCompressor; DDP: powerSGD_hook), on each link rate. The
# Fashion-MNIST MLP, 2 workers x 1 thread, batch 2x32, Adam lr 1e-3, STEPS steps, PowerSGD from
# step 2 (DDP's earliest), test accuracy at the end. Ours and DDP alternate row by row.
#
# Also: one process's compute-only step rate at the same per-replica batch (ours, 1 worker), the
# share of it PowerSGD reaches, and the share of the link's rate an uncompressed step moves (each
# worker sends the model's gradient once per step; TCP's payload is at most 1448/1514 = 95.6% of
# a link's rate at MTU 1500, less with the acknowledgements of the other direction).
# Results: docs/performance.md, "Training on emulated networks". Needs root.
#
#   scripts/bench-network-train.sh [build-dir] [steps] [links]
#   scripts/bench-network-train.sh build 400 "100mbit 1gbit unshaped"
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
BUILD_DIR="$(realpath "${1:-build}")"
STEPS="${2:-400}"
LINKS="${3:-100mbit 1gbit unshaped}"
AUTODIST="$BUILD_DIR/bin/autodist"
PY=/usr/bin/python3
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
require_training_peer bench-network-train "$BUILD_DIR" "$PY"
if ! [[ "$STEPS" =~ ^[0-9]+$ ]] || ((STEPS <= 20)); then
  echo "bench-network-train: steps $STEPS: expected more than 20 (DDP's warm-up)" >&2
  exit 2
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
load() { cut -d' ' -f1 /proc/loadavg; }

# ours LINK WORKERS COMPRESSOR: "steps_per_s wire_bytes_per_step accuracy" (LINK "loopback": none).
ours() {
  local link="$1" workers="$2" compressor="$3" name="bench-net-$RANDOM" network=()
  cat >"$WORK/$name.yaml" <<EOF
apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: $name
spec:
  model:
    path: $ROOT/examples/fashion-mnist/fmnist_mlp.onnx
    loss: loss
    logits: logits
    labels: label
  data:
    format: fashion-mnist
    batchSizePerReplica: 32
  training:
    steps: $STEPS
    optimizer:
      name: adam
      lr: 0.001
    logIntervalSteps: $STEPS
  strategy:
    builder: AllReduce
    options:
      allReduceSpec: AUTO
      compressor: $compressor
$([[ $compressor == PowerSGDCompressor ]] && printf "      powersgdRank: 1\n      powersgdStartStep: 2")
  resources:
    workers: $workers
    parameterServers: 0
EOF
  [[ "$link" != loopback ]] && network=(--network "$link")
  local out
  out="$("$AUTODIST" run "$WORK/$name.yaml" --threads 1 --log-dir "$WORK/$name" "${network[@]}" 2>&1)" || {
    echo "$out" >&2
    exit 1
  }
  "$PY" - "$WORK/$name" "$workers" <<'EOF'
import json, sys
results = [json.load(open(f"{sys.argv[1]}/worker-{r}.result.json")) for r in range(int(sys.argv[2]))]
rate = sum(r["steps"] / r["seconds"] for r in results) / len(results)
chief = results[0]
sent = chief.get("allReduce", {}).get("bytesSent", 0) / chief["steps"]
print(f'{rate:.2f} {sent:.0f} {chief.get("accuracy", 0):.4f}')
EOF
}

# torch LINK POWERSGD_RANK: "steps_per_s accuracy", one rank per host of an emulated network.
torch_ddp() {
  local link="$1" rank="$2"
  # shellcheck disable=SC2016 # the inner script expands its own variables
  "$AUTODIST" network --hosts 2 --rate "$link" -- /bin/bash -c '
    set -e
    for r in 0 1; do
      netns="AUTODIST_NETWORK_NETNS_$r"
      nsenter --net="${!netns}" '"$PY"' bench/pytorch_ddp_step.py --model mlp --batch-size 32 \
        --steps '"$STEPS"' --optimizer adam --lr 0.001 --powersgd-rank '"$rank"' \
        --powersgd-start 2 --eval --rank $r --master-addr "$AUTODIST_NETWORK_ADDRESS_0" \
        --master-port 29500 --ifname eth0 &
    done
    wait' 2>/dev/null |
    awk '/steps_per_second/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
                              printf "%s %s\n", v["steps_per_second"], v["accuracy"] }'
}

read -r compute _ <<<"$(ours loopback 1 NoneCompressor)"
echo "MLP 2x32, Adam, $STEPS steps, 2 workers x 1 thread, $(nproc) cores; one process computes" \
  "$compute steps/s (ours, 1 worker, same batch); load $(load)"
printf "%-9s %-9s | %9s %9s %7s | %8s %8s | %s\n" link compressor "ours st/s" "DDP st/s" \
  ours/DDP "ours acc" "DDP acc" "note"
for link in $LINKS; do
  for compressor in NoneCompressor PowerSGDCompressor; do
    rank=0
    [[ $compressor == PowerSGDCompressor ]] && rank=1
    read -r rate wire acc <<<"$(ours "$link" 2 "$compressor")"
    read -r torch_rate torch_acc <<<"$(torch_ddp "$link" "$rank")"
    awk -v l="$link" -v c="${compressor%Compressor}" -v o="$rate" -v t="$torch_rate" -v oa="$acc" \
      -v ta="$torch_acc" -v w="$wire" -v k="$compute" -v load="$(load)" 'BEGIN {
        note = sprintf("load %s; %.0f KiB/step", load, w / 1024)
        bits = l; gsub(/[a-z]+$/, "", bits)
        unit = (l ~ /gbit$/) ? 1e9 : (l ~ /mbit$/) ? 1e6 : 0
        if (unit > 0) note = note sprintf("; %.1f%% of the link", 100 * w * 8 * o / (bits * unit))
        if (c == "PowerSGD") note = note sprintf("; %.0f%% of compute-only", 100 * o / k)
        printf "%-9s %-9s | %9.1f %9.1f %6.2fx | %8s %8.4f | %s\n", l, c, o, t, o / t, oa, ta, note
      }'
  done
done
