#!/usr/bin/env bash
# The GPU checks, in two halves, for a GPU machine that has CUDA, PyTorch and no network and none
# of our Debian libraries:
#
#   scripts/device-check.sh pack [BUILD_DIR]   # here: build the GPU tests and benchmarks, and
#                                             # pack them with their non-CUDA shared libraries
#                                             # into .device-bundle/autodist-gpu.tar.xz
#   scripts/device-check.sh run OUT_DIR [all|tests|train]
#                                             # there, from the repository root: unpack, run the
#                                             # GPU tests, TensorBoard's reading of an event
#                                             # file written here (and its golden file), and the
#                                             # benchmarks (`tests`: none, `train`: the training
#                                             # steps alone); results go to OUT_DIR
#   scripts/device-check.sh pack-data [BUILD_DIR]
#   scripts/device-check.sh run-data OUT_DIR [EPOCHS]
#                                             # what needs Fashion-MNIST: bf16 against fp32
#                                             # accuracy, and 2 GPU workers against PyTorch DDP
#                                             # (scripts/bench-gpu-workers.sh); autodist,
#                                             # autodist-runtime and the data in .device-data/
#                                             # (carried alone: with the GPU tests' bundle it
#                                             # passes 64 MiB)
#
# The bundle's binaries find their libraries through $ORIGIN/../lib. The CUDA libraries (cudart,
# cuBLAS, cuDNN, NCCL) are far too large to carry and come from the GPU machine's own CUDA at run
# time; the bundle carries none of them. docs/gpu.md records every device run.
#
# Each GPU test binary may run AUTODIST_DEVICE_TEST_SECONDS (300 by default) before it is stopped
# and counted failed; OUT_DIR/tests-seconds.txt lists what each took.
set -euo pipefail
# use_machine_libraries: NCCL and cuDNN from the GPU machine (machine-libraries.sh).
# shellcheck source=scripts/machine-libraries.sh
source "$(dirname "${BASH_SOURCE[0]}")/machine-libraries.sh"

root=$(cd "$(dirname "$0")/.." && pwd)
bundle_dir="$root/.device-bundle"
bundle="$bundle_dir/autodist-gpu.tar.xz"
data_dir="$root/.device-data"
data_bundle="$data_dir/autodist-data.tar.xz"
fashion_mnist=/usr/share/datasets/fashion-mnist
limit_mib=60  # the GPU machine takes 64 MiB per call, the working tree included

# Libraries the GPU machine has itself: the C runtime and the CUDA libraries.
is_system_library() {
  case "$1" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | \
      libcuda.so* | libcudart* | libcublas* | libcudnn* | libnccl* | libnvidia*) return 0 ;;
  esac
  return 1
}

# Strips the binaries under $1/bin and $1/tests, points them at $1/lib, and copies there the
# shared libraries they need that the GPU machine lacks (everything but the C runtime and CUDA).
stage_libraries() {
  local stage=$1 binary library name
  mkdir -p "$stage/lib"
  for binary in "$stage"/bin/* "$stage"/tests/*; do
    [[ -f "$binary" ]] || continue
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
}

# Compresses $2 (a directory under $1) into $3 and refuses one over the limit.
# xz, not gzip: the binaries shrink to about a third (198 MiB: gzip 60 MiB, xz -9 22 MiB).
compress_bundle() {
  local dir=$1 name=$2 archive=$3
  rm -f "${archive%.tar.xz}.tar.gz"  # an older bundle's, which would travel too
  tar -C "$dir" -cf - "$name" | xz -9 -T0 >"$archive"
  rm -rf "${dir:?}/$name"
  local size_mib=$(($(stat -c %s "$archive") / 1024 / 1024))
  echo "device-check: $archive is $size_mib MiB (limit $limit_mib MiB)"
  if ((size_mib > limit_mib)); then
    echo "device-check: the bundle is over $limit_mib MiB; the GPU machine would refuse it" >&2
    exit 1
  fi
}

# There: through xz where the machine has it, else Python's lzma (PyTorch's Python is always
# there); modes and links as packed.
unpack_bundle() {
  local archive=$1 into=$2
  if command -v xz >/dev/null; then
    tar -C "$into" -xJf "$archive"
  else
    python3 - "$archive" "$into" <<'PY'
import sys
import tarfile

with tarfile.open(sys.argv[1], "r:xz") as archive:
    extra = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
    archive.extractall(sys.argv[2], **extra)
PY
  fi
}

# The commit a bundle was built from ("+dirty" with uncommitted changes), for docs/gpu.md.
write_commit() {
  { git -C "$root" rev-parse HEAD
    git -C "$root" diff --quiet HEAD -- . ':!.device-bundle' ':!.device-data' || echo "+dirty"; } |
    paste -sd '' >"$1/COMMIT"
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
  mkdir -p "$stage/bin" "$stage/tests"
  # autodist-runtime: the members of the GPU job tests (tests/gpu/*_job_test.cc).
  cp "$build/bin/fused_optimizer_bench" "$build/bin/half_compression_bench" "$build/bin/top_k_bench" \
    "$build/bin/powersgd_bench" "$build/bin/gemm_bench" "$build/bin/train_step_bench" \
    "$build/bin/autodist-runtime" "$stage/bin/"
  for test in "$root"/tests/gpu/*_test.cc; do cp "$build/tests/gpu_$(basename "$test" .cc)" "$stage/tests/"; done
  stage_libraries "$stage"
  # An event file written here, with the run's progress lines, for TensorBoard's own reader
  # there (scripts/tensorboard-check.py check).
  local parity="$root/tests/fixtures/parity/mlp"
  mkdir -p "$stage/tensorboard"
  "$build/bin/autodist-runtime" --model "$parity/model.onnx" --train "image=$parity/image.npy" \
    --train "label=$parity/label.npy" --eval "image=$parity/image.npy" \
    --eval "label=$parity/label.npy" --batch-size 32 --steps 6 --log-every 2 --eval-every 3 \
    --optimizer sgd --lr 0.05 --opt momentum=0.9 --data none \
    --tensorboard "$stage/tensorboard/run" >"$stage/tensorboard/progress.log"
  write_commit "$stage"
  # The tests read fixtures from the source path compiled into them.
  echo "$root" >"$stage/SOURCE"
  compress_bundle "$bundle_dir" autodist-gpu "$bundle"
}

# The checks that need Fashion-MNIST (bf16 against fp32 accuracy, issue 15; 2 GPU workers
# against DDP, issue 16): autodist, autodist-runtime and the data set, too large to ride with the
# GPU tests, in a bundle of their own (.device-data/, carried alone).
pack_data() {
  local build=${1:-$root/build}
  "$root/scripts/setup.sh" device
  [[ -f "$fashion_mnist/train-images-idx3-ubyte.gz" ]] || {
    echo "device-check: Fashion-MNIST is missing ($fashion_mnist): scripts/setup.sh installs it" >&2
    exit 2
  }
  cmake --build "$build" -j "$(nproc)" --target autodist autodist-runtime
  local stage="$data_dir/autodist-data"
  rm -rf "$stage" "$data_bundle"
  mkdir -p "$stage/bin" "$stage/data"
  cp "$build/bin/autodist" "$build/bin/autodist-runtime" "$stage/bin/"
  cp "$fashion_mnist"/*.gz "$stage/data/"
  stage_libraries "$stage"
  write_commit "$stage"
  compress_bundle "$data_dir" autodist-data "$data_bundle"
}

# There: the MLP and the CNN trained on the GPU in fp32 and in bf16 on the whole training set,
# evaluated on the test set (bf16 must end within 0.5 points of fp32's accuracy); then 2 GPU
# workers against PyTorch DDP.
run_data() {
  local out=${1:?usage: scripts/device-check.sh run-data OUT_DIR [EPOCHS]}
  local epochs=${2:-3}
  [[ -f "$data_bundle" ]] || { echo "device-check: no bundle at $data_bundle" >&2; exit 2; }
  local unpacked=/tmp/autodist-device-data
  rm -rf "$unpacked" && mkdir -p "$unpacked" "$out"
  unpack_bundle "$data_bundle" "$unpacked"
  local dir="$unpacked/autodist-data" model precision status=0
  { echo "commit $(cat "$dir/COMMIT")"; nvidia-smi -L; } >"$out/device.txt" 2>&1
  use_machine_libraries "$out"
  for model in mlp cnn; do
    for precision in fp32 bf16; do
      "$dir/bin/autodist-runtime" --model "$root/examples/fashion-mnist/fmnist_$model.onnx" \
        --data fashion-mnist --data-dir "$dir/data" --device cuda --precision "$precision" \
        --epochs "$epochs" --batch-size 64 --optimizer sgd --lr 0.01 --opt momentum=0.9 \
        --seed 1 >"$out/accuracy-$model-$precision.log" 2>&1 || status=1
      echo "$model $precision: $(grep -o 'accuracy [0-9.]*' "$out/accuracy-$model-$precision.log" | tail -1)"
    done
  done | tee "$out/accuracy.txt"
  python3 - "$out/accuracy.txt" <<'PY' | tee -a "$out/accuracy.txt" || status=1
import re, sys
found = {}
for line in open(sys.argv[1]):
    match = re.match(r"(\w+) (\w+): accuracy ([0-9.]+)", line)
    if match:
        found[(match.group(1), match.group(2))] = float(match.group(3))
ok = True
for model in ("mlp", "cnn"):
    fp32, bf16 = found.get((model, "fp32")), found.get((model, "bf16"))
    if fp32 is None or bf16 is None:
        print(f"{model}: a run did not finish"); ok = False; continue
    gap = (fp32 - bf16) * 100
    verdict = "within" if abs(gap) <= 0.5 else "NOT within"
    ok = ok and abs(gap) <= 0.5
    print(f"{model}: bf16 {bf16 * 100:.2f}% vs fp32 {fp32 * 100:.2f}%: {gap:+.2f} points, {verdict} 0.5")
sys.exit(0 if ok else 1)
PY
  "$root/scripts/bench-gpu-workers.sh" "$dir/bin" "$dir/data" "$out" || status=1
  return $status
}

run() {
  local out=${1:?usage: scripts/device-check.sh run OUT_DIR [all|tests|train]}
  local what=${2:-all}
  [[ -f "$bundle" ]] || { echo "device-check: no bundle at $bundle (pack it first)" >&2; exit 2; }
  local unpacked=/tmp/autodist-device-check
  rm -rf "$unpacked" && mkdir -p "$unpacked" "$out"
  unpack_bundle "$bundle" "$unpacked"
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
  use_machine_libraries "$out"
  local status=0 test
  # The GPU job tests start the bundle's members.
  export AUTODIST_RUNTIME="$dir/bin/autodist-runtime"
  # Each binary has a time limit, so that one hung test (a collective waiting for a peer) cannot
  # spend the session's device time; each one's seconds go to tests-seconds.txt, for planning.
  local limit=${AUTODIST_DEVICE_TEST_SECONDS:-300} started rc
  for test in "$dir"/tests/*; do
    started=$SECONDS
    rc=0
    timeout --kill-after=10 "$limit" "$test" --gtest_output="xml:$out/$(basename "$test").xml" \
      >>"$out/tests.log" 2>&1 || rc=$?
    ((rc == 0)) || status=1
    ((rc == 124 || rc == 137)) && echo "device-check: $(basename "$test") ran past ${limit} s" |
      tee -a "$out/tests.log"
    echo "$(basename "$test") $((SECONDS - started)) s (exit $rc)" >>"$out/tests-seconds.txt"
  done
  cat "$out/tests-seconds.txt"
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
  pack-data) shift; pack_data "$@" ;;
  run-data) shift; run_data "$@" ;;
  *) echo "usage: scripts/device-check.sh pack [BUILD_DIR] | run OUT_DIR [all|tests|train] |" \
       "pack-data [BUILD_DIR] | run-data OUT_DIR [EPOCHS]" >&2; exit 2 ;;
esac
