#!/usr/bin/env bash
# Step time of a parameter-server job (2 workers + 1 PS, synchronous PS builder, local processes
# through `autodist run`) against the single-process engine on the same global batch, on the
# Fashion-MNIST MLP. Same model, optimizer (SGD, lr 0.01) and step count; the single process
# gets both cores (--threads 2), each worker one (--threads 1), as the two workers share the
# machine's 2 cores.
#
# Steps/s come from each process's own training-loop rate (the runtime's "samples/s", measured
# from the first to the last step), so process start-up, data loading, the PS Init and the final
# evaluation are excluded: steps/s = samples/s / the process's samples per step (the global
# batch for the single process, batchSizePerReplica for a worker; the two workers run in
# lockstep, their mean is used). Wall time of the whole command is printed for reference.
#
#   scripts/bench-ps.sh [build-dir] [steps] [repeats]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
BUILD_DIR="${1:-build}"
STEPS="${2:-200}"
REPEATS="${3:-2}"
MODEL="$ROOT/examples/fashion-mnist/fmnist_mlp.onnx"
RUNTIME="$BUILD_DIR/bin/autodist-runtime"
AUTODIST="$BUILD_DIR/bin/autodist"
for binary in "$RUNTIME" "$AUTODIST"; do
  if [[ ! -x "$binary" ]]; then
    echo "bench-ps: $binary is missing: cmake --build $BUILD_DIR --target autodist autodist-runtime" >&2
    exit 2
  fi
done
if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
  echo "bench-ps: Fashion-MNIST is missing: scripts/setup.sh installs dataset-fashion-mnist" >&2
  exit 2
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# The manifest of the PS job: 2 workers x 1 replica x `per_replica`, 1 parameter server.
manifest() {
  local per_replica="$1"
  cat >"$WORK/job-$per_replica.yaml" <<EOF
apiVersion: autodist.io/v1alpha1
kind: AutoDistJob
metadata:
  name: bench-ps-$per_replica
spec:
  model:
    path: $MODEL
    loss: loss
    logits: logits
    labels: label
  data:
    format: fashion-mnist
    batchSizePerReplica: $per_replica
  training:
    steps: $STEPS
    optimizer:
      name: sgd
      lr: 0.01
    logIntervalSteps: $STEPS
  strategy:
    builder: PS
    options:
      sync: true
      staleness: 0
  resources:
    workers: 2
    replicasPerWorker: 1
    parameterServers: 1
EOF
  echo "$WORK/job-$per_replica.yaml"
}

now() { date +%s.%N; }

# samples/s of the single process ("trained N steps in X s (Y samples/s)").
single_rate() {
  sed -n 's/^trained .* (\([0-9.]*\) samples\/s).*/\1/p'
}

# Mean samples/s of the workers in `autodist run`'s summary ("  worker-0  200 steps  12,345
# samples/s ..."; thousands are grouped with commas).
worker_rate() {
  grep -E '^ +worker' | sed -n 's/.* steps  \([0-9,.]*\) samples\/s.*/\1/p' | tr -d , |
    awk '{ sum += $1; n++ } END { if (n > 0) printf "%.1f", sum / n }'
}

printf "%-6s %-7s %12s %12s %10s %10s %10s %9s\n" global run "1-proc st/s" "PS st/s" \
  "overhead" "1-proc s" "PS wall s" "PS ms/st"
for global in 128 64; do
  per_replica=$((global / 2))
  job="$(manifest "$per_replica")"
  for run in $(seq "$REPEATS"); do
    start="$(now)"
    single_out="$("$RUNTIME" --model "$MODEL" --data fashion-mnist --steps "$STEPS" \
      --batch-size "$global" --optimizer sgd --lr 0.01 --threads 2 2>&1)"
    single_wall="$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
    start="$(now)"
    ps_out="$("$AUTODIST" run "$job" --threads 1 --log-dir "$WORK/logs-$global-$run" 2>&1)" || {
      echo "$ps_out" >&2
      exit 1
    }
    ps_wall="$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')"
    single_sps="$(echo "$single_out" | single_rate)"
    ps_sps="$(echo "$ps_out" | worker_rate)"
    if [[ -z "$single_sps" || -z "$ps_sps" ]]; then
      printf '%s\n---\n%s\n' "$single_out" "$ps_out" >&2
      echo "bench-ps: could not read samples/s from the output above" >&2
      exit 1
    fi
    awk -v g="$global" -v r="$run" -v s="$single_sps" -v p="$ps_sps" -v pr="$per_replica" \
      -v sw="$single_wall" -v pw="$ps_wall" 'BEGIN {
        single = s / g; ps = p / pr
        printf "%-6d %-7d %12.1f %12.1f %9.2fx %10s %10s %9.2f\n", g, r, single, ps, single / ps,
          sw, pw, 1000 / ps
      }'
  done
done
echo "steps/s from each process's training-loop samples/s (start-up, Init and evaluation" \
  "excluded); overhead = single-process steps/s / PS steps/s"
