#!/usr/bin/env bash
# `make run`: inspect the Fashion-MNIST example model, compile strategies for it (the example
# resource spec; a 2-worker x 2-GPU cluster with 2 PS), then train it for one epoch on this
# machine with the single-process runtime. (`autodist run` of a job manifest comes next.)
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
echo
echo "== autodist-runtime: one epoch of the MLP on Fashion-MNIST"
"$BUILD_DIR/bin/autodist-runtime" --model "$EXAMPLE/fmnist_mlp.onnx" --data fashion-mnist \
  --optimizer adam --lr 1e-3 --batch-size 64 --epochs 1 --log-every 200 \
  --export "$BUILD_DIR/fmnist_mlp.trained.onnx"
