# shellcheck shell=bash
# Shell pieces the peer benchmarks share; sourced (`source scripts/bench-lib.sh`), not run.

# value KEY: the number after "KEY=" in the lines on stdin.
value() { sed -n "s/.*$1=\([0-9.e+-]*\).*/\1/p"; }

# The median of the numbers on stdin, one per line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# wait_ranks STORE PID...: waits for allreduce_bench ranks started in the background, each
# writing to STORE/out.<rank>; prints rank 0's seconds per all-reduce, or every rank's output
# and exits 1 when one failed.
wait_ranks() {
  local store="$1" pid
  shift
  for pid in "$@"; do
    if ! wait "$pid"; then
      cat "$store"/out.* >&2
      exit 1
    fi
  done
  value seconds <"$store/out.0"
}

# require_training_peer NAME BUILD_DIR PYTHON: exits 2, naming what to do, unless the launcher
# and runtime are built, PYTHON has PyTorch and Fashion-MNIST is installed.
require_training_peer() {
  local name="$1" build_dir="$2" python="$3"
  if [[ ! -x "$build_dir/bin/autodist" || ! -x "$build_dir/bin/autodist-runtime" ]]; then
    echo "$name: build $build_dir first (autodist, autodist-runtime)" >&2
    exit 2
  fi
  if ! "$python" -c "import torch" 2>/dev/null; then
    echo "$name: PyTorch is missing: scripts/setup.sh fixtures installs python3-torch" >&2
    exit 2
  fi
  if [[ ! -d /usr/share/datasets/fashion-mnist ]]; then
    echo "$name: scripts/setup.sh installs dataset-fashion-mnist" >&2
    exit 2
  fi
}
