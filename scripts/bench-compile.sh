#!/usr/bin/env bash
# The strategy compiler at scale: 100,000 variables on 64 nodes x 8 GPUs, every builder.
set -euo pipefail
BUILD_DIR="${1:-build}"
"$BUILD_DIR/bin/compile_bench" --variables 100000 --nodes 64 --gpus-per-node 8 --repeats 5
