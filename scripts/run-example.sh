#!/usr/bin/env bash
# `make run`: inspect the Fashion-MNIST example model, compile a strategy for it, then train it
# with `autodist run examples/fashion-mnist/job-ps.yaml` — 2 workers and 1 parameter server as
# local processes, the same manifest `kubectl apply` takes.
set -euo pipefail
BUILD_DIR="${1:-build}"
AUTODIST="$BUILD_DIR/bin/autodist"
EXAMPLE=examples/fashion-mnist

echo "== autodist inspect $EXAMPLE/fmnist_mlp.onnx"
"$AUTODIST" inspect "$EXAMPLE/fmnist_mlp.onnx"
echo
echo "== autodist compile --strategy PSLoadBalancing --workers 2 --ps 1"
"$AUTODIST" compile --model "$EXAMPLE/fmnist_mlp.onnx" --workers 2 --ps 1 \
  --strategy PSLoadBalancing --option sync=true -o "$BUILD_DIR/fmnist_mlp.strategy.txt"
echo
echo "== autodist run $EXAMPLE/job-ps.yaml"
# The job resumes from its latest checkpoint when there is one (and a finished one is not run
# again); `make run` trains from scratch: --fresh deletes the earlier run's checkpoints.
"$AUTODIST" run "$EXAMPLE/job-ps.yaml" --fresh --log-dir "$BUILD_DIR/autodist-logs/fmnist-ps"
