#!/usr/bin/env bash
# Validates Auto's cost model (bench/auto_validation.py): for the Fashion-MNIST MLP and CNN and
# an embedding classifier with a 100,000 x 64 table, on 1 and 2.5 Gbit/s emulated links, the
# predicted step of every builder (and fp16, PowerSGD, Auto's pick) against the measured one.
# Needs root (network namespaces, docs/networks.md); takes about half an hour on 2 cores.
#
#   scripts/bench-auto.sh [build-dir] [models] [rates] [repeats] [optimizer]
#
# optimizer: sgd-momentum (default; parameter servers send back whole tables, since momentum
# moves every row) or sgd (plain; they send back the rows a step changed).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
MODELS="${2:-mlp,cnn,embedding}"
RATES="${3:-1gbit,2.5gbit}"
REPEATS="${4:-5}"
OPTIMIZER="${5:-sgd-momentum}"
WORK="$BUILD_DIR/bench-auto"
EMBEDDING="$WORK/embedding-100k"
mkdir -p "$WORK"
if [[ ! -f "$EMBEDDING/model.onnx" ]]; then
  # The PyTorch embedding fixture's ops and names, with a table of 100,000 rows whose every row
  # a sample may touch (examples/large-embedding/make_model.py).
  /usr/bin/python3 examples/large-embedding/make_model.py "$EMBEDDING" --rows 100000 --dim 64 \
    --active-rows 100000 --samples 20000 >/dev/null
fi
exec /usr/bin/python3 bench/auto_validation.py --autodist "$BUILD_DIR/bin/autodist" \
  --work "$(realpath "$WORK")" --embedding-dir "$(realpath "$EMBEDDING")" --source "$(pwd)" \
  --models "$MODELS" --rates "$RATES" --repeats "$REPEATS" --optimizer "$OPTIMIZER"
