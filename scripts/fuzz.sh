#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of tests/fuzz with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer (BUILD_DIR, default build-fuzz), then fuzzes each for FUZZ_SECONDS
# (default 60) from its seed corpus (tests/fuzz/corpus/<target>) and the crashes kept in
# tests/fuzz/crashes/<target>. What a run finds lands in BUILD_DIR/fuzz/artifacts/<target>/;
# the corpus it grows stays in BUILD_DIR/fuzz/corpus/<target>/ for the next run.
#
#   make fuzz                                  # every target, 60 s each
#   FUZZ_SECONDS=600 FUZZ_TARGETS="npy idx" make fuzz
#
# Exits 1 when a target crashed (its log and the input are named), 0 otherwise. A crash, once
# fixed, goes into tests/fuzz/crashes/<target>/ so that ctest's fuzz.<target> replays it forever.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build-fuzz}"
SECONDS_EACH="${FUZZ_SECONDS:-60}"

scripts/setup.sh fuzz
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTODIST_CUDA=OFF -DAUTODIST_BUILD_BENCH=OFF \
  -DAUTODIST_FUZZ=ON \
  "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-pass-failed"
cmake --build "$BUILD_DIR" --target fuzz_targets

# The targets: the list in tests/fuzz/CMakeLists.txt, set(AUTODIST_FUZZ_TARGETS ...).
all_targets=$(sed -n '/^set(AUTODIST_FUZZ_TARGETS/,/)/p' tests/fuzz/CMakeLists.txt |
  tr '()' '  ' | tr ' ' '\n' | grep -v -e '^set$' -e '^AUTODIST_FUZZ_TARGETS$' -e '^$')
targets="${FUZZ_TARGETS:-$all_targets}"
failed=()
for target in $targets; do
  corpus="$BUILD_DIR/fuzz/corpus/$target"
  artifacts="$BUILD_DIR/fuzz/artifacts/$target"
  log="$BUILD_DIR/fuzz/$target.log"
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz: $target for ${SECONDS_EACH} s"
  # New inputs go to the first directory only: the committed seeds stay as they are.
  # The kill: a target over its memory limit prints the sanitizer's memory profile before it
  # saves the input, and where ptrace is restricted (containers) that never returns.
  if ! timeout -s KILL $((SECONDS_EACH + 120)) \
      "$BUILD_DIR/fuzz/fuzz_$target" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 \
      -max_len=65536 -timeout=20 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$corpus" "tests/fuzz/corpus/$target" \
      $([[ -d "tests/fuzz/crashes/$target" ]] && echo "tests/fuzz/crashes/$target") \
      >"$log" 2>&1; then
    echo "fuzz: $target FAILED: $log; inputs in $artifacts"
    failed+=("$target")
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+.*DONE' "$log" |
    sed "s/^/fuzz: $target: /" || true
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: crashes in: ${failed[*]}"
  exit 1
fi
