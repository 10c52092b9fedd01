#!/usr/bin/env bash
# `make run` until the training runtime lands: inspect the Fashion-MNIST example model and compile
# strategies for it on the example resource spec and on a 2-worker x 2-GPU cluster with 2 PS.
set -euo pipefail
BUILD_DIR="${1:-build}"
AUTODIST="$BUILD_DIR/bin/autodist"
EXAMPLE=examples/fashion-mnist

echo "== autodist inspect $EXAMPLE/fmnist_mlp.onnx"
"$AUTODIST" inspect "$EXAMPLE/fmnist_mlp.onnx"
echo
echo "== autodist compile --strategy PSLoadBalancing (resource spec: $EXAMPLE/resource_spec.yml)"
"$AUTODIST" compile --model "$EXAMPLE/fmnist_mlp.onnx" --resources "$EXAMPLE/resource_spec.yml" \
  --strategy PSLoadBalancing --option sync=true
echo
echo "== autodist compile --strategy PartitionedPS --workers 2 --gpus-per-worker 2 --ps 2"
"$AUTODIST" compile --model "$EXAMPLE/fmnist_mlp.onnx" --workers 2 --gpus-per-worker 2 --ps 2 \
  --strategy PartitionedPS -o "$BUILD_DIR/fmnist_mlp.strategy.txt"
