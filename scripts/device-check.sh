#!/usr/bin/env bash
# The GPU checks, in two halves, for a GPU machine that has CUDA, PyTorch and no network and none
# of our Debian libraries:
#
#   scripts/device-check.sh pack [BUILD_DIR]   # here: build the GPU tests and benchmarks, and
#                                             # pack them with their non-CUDA shared libraries
#                                             # into .device-bundle/autodist-gpu.tar.gz
#   scripts/device-check.sh run OUT_DIR [all|tests|train]
#                                             # there, from the repository root: unpack, run the
#                                             # GPU tests, TensorBoard's reading of an event
#                                             # file written here (and its golden file), and the
#                                             # benchmarks (`tests`: none, `train`: the training
#                                             # steps alone); results go to OUT_DIR
#
# The bundle's binaries find their libraries through $ORIGIN/../lib. The CUDA libraries (cudart,
# cuBLAS, cuDNN, NCCL) are far too large to carry and come from the GPU machine's own CUDA at run
# time; the bundle carries none of them. docs/gpu.md records every device run.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bundle_dir="$root/.device-bundle"
bundle="$bundle_dir/autodist-gpu.tar.gz"
limit_mib=60  # the GPU machine takes 64 MiB per call, the working tree included

# Libraries the GPU machine has itself: the C runtime and the CUDA libraries.
is_system_library() {
  case "$1" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
      libcuda.so* | libcudart* | libcublas* | libcudnn* | libnccl* | libnvidia*) return 0 ;;
  esac
  return 1
}

pack() {
  local build=${1:-$root/build}
  "$root/scripts/setup.sh" device
  local targets=(fused_optimizer_bench half_compression_bench top_k_bench powersgd_bench gemm_bench
    train_step_bench)
  local test
  for test in "$root"/tests/gpu/*_test.cc; do targets+=("gpu_$(basename "$test" .cc)"); done
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" autodist-runtime

  local stage="$bundle_dir/autodist-gpu"
  rm -rf "$stage" "$bundle"
  mkdir -p "$stage/bin" "$stage/tests" "$stage/lib"
  # autodist-runtime: the members of the GPU job tests (tests/gpu/*_job_test.cc).
  cp "$build/bin/fused_optimizer_bench" "$build/bin/half_compression_bench" "$build/bin/top_k_bench" \
    "$build/bin/powersgd_bench" \
    "$build/bin/gemm_bench" "$build/bin/train_step_bench" "$build/bin/autodist-runtime" \
    "$stage/bin/"
  for test in "$root"/tests/gpu/*_test.cc; do cp "$build/tests/gpu_$(basename "$test" .cc)" "$stage/tests/"; done
  local binary library name
  for binary in "$stage"/bin/* "$stage"/tests/*; do
    strip --strip-unneeded "$binary"
    patchelf --set-rpath '$ORIGIN/../lib' "$binary"
    while read -r name library; do
      is_system_library "$name" && continue
      [[ -f "$stage/lib/$name" ]] || cp -L "$library" "$stage/lib/$name"
    done < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
  done
  for library in "$stage"/lib/*; do
    strip --strip-unneeded "$library" 2>/dev/null || true
    patchelf --set-rpath '$ORIGIN' "$library"
  done
  # An event file written here, with the run's progress lines, for TensorBoard's own reader
  # there (scripts/tensorboard-check.py check).
  local parity="$root/tests/fixtures/parity/mlp"
  mkdir -p "$stage/tensorboard"
  "$build/bin/autodist-runtime" --model "$parity/model.onnx" --train "image=$parity/image.npy" \
    --train "label=$parity/label.npy" --eval "image=$parity/image.npy" \
    --eval "label=$parity/label.npy" --batch-size 32 --steps 6 --log-every 2 --eval-every 3 \
    --optimizer sgd --lr 0.05 --opt momentum=0.9 --data none \
    --tensorboard "$stage/tensorboard/run" >"$stage/tensorboard/progress.log"
  # The commit the bundle was built from ("+dirty" with uncommitted changes), for docs/gpu.md.
  { git -C "$root" rev-parse HEAD
    git -C "$root" diff --quiet HEAD -- . ':!.device-bundle' || echo "+dirty"; } | paste -sd '' \
    >"$stage/COMMIT"
  # The tests read fixtures from the source path compiled into them.
  echo "$root" >"$stage/SOURCE"
  tar -C "$bundle_dir" -czf "$bundle" autodist-gpu
  rm -rf "$stage"
  local size_mib=$(($(stat -c %s "$bundle") / 1024 / 1024))
  echo "device-check: $bundle is $size_mib MiB (limit $limit_mib MiB)"
  if ((size_mib > limit_mib)); then
    echo "device-check: the bundle is over $limit_mib MiB; the GPU machine would refuse it" >&2
    exit 1
  fi
}

run() {
  local out=${1:?usage: scripts/device-check.sh run OUT_DIR [all|tests|train]}
  local what=${2:-all}
  [[ -f "$bundle" ]] || { echo "device-check: no bundle at $bundle (pack it first)" >&2; exit 2; }
  local unpacked=/tmp/autodist-device-check
  rm -rf "$unpacked" && mkdir -p "$unpacked" "$out"
  tar -C "$unpacked" -xzf "$bundle"
  local dir="$unpacked/autodist-gpu"
  { echo "commit $(cat "$dir/COMMIT")"; nvidia-smi -L
    echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader)"; } \
    >"$out/device.txt" 2>&1
  # The tests read fixtures under the path they were built in: point it at this checkout.
  local source
  source=$(cat "$dir/SOURCE")
  if [[ "$source" != "$root" && ! -e "$source" ]]; then
    mkdir -p "$(dirname "$source")" && ln -s "$root" "$source"
  fi
  # NCCL is the machine's too: its CUDA's, or the one PyTorch's wheels bring, which the loader
  # does not know of.
  if ! ldconfig -p | grep -q 'libnccl\.so\.2'; then
    local nccl
    nccl=$(find / -xdev -name 'libnccl.so.2' -print -quit 2>/dev/null || true)
    if [[ -n "$nccl" ]]; then
      export LD_LIBRARY_PATH="$(dirname "$nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      echo "NCCL from $nccl" >>"$out/device.txt"
    fi
  fi
  local status=0 test
  # The GPU job tests start the bundle's members.
  export AUTODIST_RUNTIME="$dir/bin/autodist-runtime"
  for test in "$dir"/tests/*; do
    "$test" --gtest_output="xml:$out/$(basename "$test").xml" >>"$out/tests.log" 2>&1 || status=1
  done
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests.log" || true
  # What failed, with the lines around each failure (the log itself may not come back).
  grep -E -B3 -A12 '(Failure|Expected|exception|what\(\))' "$out/tests.log" | head -150 || true
  # One archive of the JUnit files: fewer files to bring back.
  (cd "$out" && tar -czf junit.tar.gz -- *.xml && rm -f -- *.xml)
  # TensorBoard reads our event file; its own writer writes the golden file tests/fixtures keeps.
  { python3 "$root/scripts/tensorboard-check.py" check "$dir/tensorboard/run" \
      "$dir/tensorboard/progress.log" &&
    python3 "$root/scripts/tensorboard-check.py" golden "$out/tensorboard-golden"; } \
    >"$out/tensorboard.log" 2>&1 || status=1
  cat "$out/tensorboard.log"
  if [[ "$what" != tests ]]; then
    "$root/scripts/bench-gpu.sh" "$dir/bin" "$out" "$what" || status=1
  fi
  return $status
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  *) echo "usage: scripts/device-check.sh pack [BUILD_DIR] | run OUT_DIR [all|tests|train]" >&2; exit 2 ;;
esac
