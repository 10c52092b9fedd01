#!/usr/bin/env bash
# Training-step throughput, our engine vs PyTorch 1.13 (Debian), same machine, same thread
# count, same models (the ONNX files were exported from the PyTorch definitions), run
# alternately so both see the same machine load. Prints steps/s, the ratio and peak memory.
#
#   scripts/bench-train.sh [build-dir] [threads] [steps]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
THREADS="${2:-$(nproc)}"
STEPS="${3:-50}"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "PyTorch is missing: scripts/setup.sh fixtures installs python3-torch" >&2
  exit 2
fi

value() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

printf "%-12s %6s %14s %14s %8s %12s %12s\n" model batch "ours steps/s" "torch steps/s" ratio \
  "ours MB" "torch MB"
while read -r name onnx batch; do
  ours=$("$BUILD_DIR/bin/train_step_bench" --model "$onnx" --batch-size "$batch" \
    --steps "$STEPS" --threads "$THREADS")
  torch=$(/usr/bin/python3 bench/pytorch_train_step.py --model "$name" --batch-size "$batch" \
    --steps "$STEPS" --threads "$THREADS")
  ours_sps=$(echo "$ours" | value steps_per_second)
  torch_sps=$(echo "$torch" | value steps_per_second)
  ratio=$(awk -v a="$ours_sps" -v b="$torch_sps" 'BEGIN { printf "%.2f", a / b }')
  printf "%-12s %6s %14s %14s %8s %12s %12s\n" "$name" "$batch" "$ours_sps" "$torch_sps" \
    "${ratio}x" "$(echo "$ours" | value peak_rss_mb)" "$(echo "$torch" | value peak_rss_mb)"
done <<'MODELS'
mlp examples/fashion-mnist/fmnist_mlp.onnx 64
mlp examples/fashion-mnist/fmnist_mlp.onnx 256
fmnist_cnn examples/fashion-mnist/fmnist_cnn.onnx 64
MODELS
